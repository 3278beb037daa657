# `dlock run` in the background for the TAP tests, with a COMMAND that
# tells what it saw and did. COMMAND is a bash script given a directory of
# its own, where it leaves marker files; the test reads them, and dlock's
# stdout and stderr, from there. Times are seconds since the epoch with
# microseconds: bash's $EPOCHREALTIME (read without starting a process),
# Time::HiRes::time in the test and the server's clock_timestamp() all read
# the same clock.
#
# The script's functions, defined before its body runs:
#   mark NAME   writes the time now to the file NAME (whole or not at all);
#   linger      waits until the test calls go() (two minutes at most),
#               in `wait`, which a trapped signal interrupts at once;
#   record_env  writes the file env: its pid, DLOCK_NAME, DLOCK_TOKEN,
#               DLOCK_OWNER, DLOCK_EXPIRES_AT, one a line (read_env).
# Its own arguments are $2, $3, ... ($1 is the directory).
package DlockRun;

use strict;
use warnings;
use Exporter 'import';
use File::Spec;
use POSIX qw(WNOHANG);
use PostgreSQL::Test::Utils;
use Time::HiRes qw(usleep time);
use DlockTest qw(poll_until);

our @EXPORT = qw(
  TRAP_TERM IGNORE_TERM
  start_run run_exit_code run_stderr run_stdout
  marker wait_marker read_env go dead_at epoch_of
  group_pids group_gone_at watchdog_of process_ids
);

die 'dlock is not on the PATH (scripts/test.sh installs it)'
  unless grep { -x "$_/dlock" } File::Spec->path;

my $prelude = <<'BASH';
DIR=$1
mark() { printf '%s\n' "${EPOCHREALTIME/,/.}" >"$DIR/.$1" && mv "$DIR/.$1" "$DIR/$1"; }
linger() {
  local i
  for ((i = 0; i < 2400; i++)); do
    [ -e "$DIR/go" ] && return 0
    sleep 0.05 &
    wait $!
  done
}
record_env() {
  printf '%s\n' "$$" "$DLOCK_NAME" "$DLOCK_TOKEN" "$DLOCK_OWNER" "$DLOCK_EXPIRES_AT" \
    >"$DIR/.env" && mv "$DIR/.env" "$DIR/env"
}
BASH

# A script body's first line: on SIGTERM, mark term and exit 0.
use constant TRAP_TERM => q{trap 'mark term; exit 0' TERM};

# A script body's first lines: SIGTERM is ignored (trap ''), but a witness
# in the script's process group marks term when the group gets it. The
# script itself ends only by SIGKILL, or when the test calls go().
use constant IGNORE_TERM => q{
(trap 'mark term; exit 0' TERM; mark witness; linger) &
until [ -e "$DIR/witness" ]; do sleep 0.01; done
trap '' TERM
};

# dlock processes started here, killed (with what they started) if the
# test ends without having seen them exit.
my %running;
END
{
	for my $run (values %running)
	{
		my $env = "$run->{dir}/env";
		if (-e $env)
		{
			my ($child) = split /\n/, PostgreSQL::Test::Utils::slurp_file($env);
			kill 'KILL', -$child;
		}
		kill 'KILL', $run->{pid};
		waitpid($run->{pid}, 0);
	}
}

# Starts `dlock run OPTIONS... NAME -- bash -c SCRIPT` with dlock from the
# PATH, stdin from /dev/null, stdout and stderr into files. Options:
# name, options (an array of dlock run's options), script (bash, after the
# functions above), args (the script's own arguments), env (a hash of
# environment variables to set for dlock; undef unsets one), own_group
# (true: dlock leads a process group of its own, so that the test can stop
# the group). Returns a hash: pid (dlock's), dir (the script's directory).
sub start_run
{
	my (%opt) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir();
	my @argv = ('dlock', 'run', @{ $opt{options} // [] }, $opt{name}, '--',
		'bash', '-c', $prelude . $opt{script}, 'bash', $dir, @{ $opt{args} // [] });
	my $pid = fork() // die "fork: $!";
	if ($pid == 0)
	{
		for my $var (keys %{ $opt{env} // {} })
		{
			my $value = $opt{env}{$var};
			defined $value ? ($ENV{$var} = $value) : delete $ENV{$var};
		}
		POSIX::setpgid(0, 0) or POSIX::_exit(125) if $opt{own_group};
		# dlock keeps ignoring what it was started ignoring (nohup's SIGHUP):
		# the tests' signals must reach it however the tests were started.
		$SIG{$_} = 'DEFAULT' for qw(HUP INT TERM QUIT);
		open(STDIN, '<', '/dev/null') or POSIX::_exit(125);
		open(STDOUT, '>', "$dir/stdout") or POSIX::_exit(125);
		open(STDERR, '>', "$dir/stderr") or POSIX::_exit(125);
		exec { $argv[0] } @argv or POSIX::_exit(127);
	}
	my $run = { pid => $pid, dir => $dir };
	$running{$pid} = $run;
	return $run;
}

# dlock's exit code once it has exited (128 + N if signal N killed it),
# waiting for it as long as poll_until does; undef if it is still running
# then, or right away when nowait is given.
sub run_exit_code
{
	my ($run, $nowait) = @_;
	return $run->{exit_code} if exists $run->{exit_code};
	my $reaped = sub {
		return 0 unless waitpid($run->{pid}, WNOHANG) == $run->{pid};
		my $status = $?;
		$run->{exit_code} = $status & 127 ? 128 + ($status & 127) : $status >> 8;
		$run->{exited_at} = time;
		delete $running{ $run->{pid} };
		return 1;
	};
	$nowait ? $reaped->() : poll_until($reaped);
	return $run->{exit_code};
}

# What dlock printed on stderr, and on stdout.
sub run_stderr { return PostgreSQL::Test::Utils::slurp_file("$_[0]{dir}/stderr") }
sub run_stdout { return PostgreSQL::Test::Utils::slurp_file("$_[0]{dir}/stdout") }

# The time in marker NAME, undef if the script has not written it.
sub marker
{
	my ($run, $name) = @_;
	my $file = "$run->{dir}/$name";
	return undef unless -e $file;
	my $t = PostgreSQL::Test::Utils::slurp_file($file);
	chomp $t;
	return $t;
}

# The time in marker NAME once the script has written it; dies if it does
# not within poll_until's time.
sub wait_marker
{
	my ($run, $name) = @_;
	poll_until(sub { defined marker($run, $name) })
	  or die "the script never marked $name:\n" . run_stderr($run);
	return marker($run, $name);
}

# What record_env wrote (once it has): a hash of pid, name, token, owner,
# expires_at.
sub read_env
{
	my ($run) = @_;
	wait_marker($run, 'env');
	my @v = split /\n/, PostgreSQL::Test::Utils::slurp_file("$run->{dir}/env");
	my %env;
	@env{qw(pid name token owner expires_at)} = @v;
	return \%env;
}

# Ends linger.
sub go
{
	my ($run) = @_;
	PostgreSQL::Test::Utils::append_to_file("$run->{dir}/go", '');
	return;
}

# When process $pid (not this one's child) was first seen dead (a zombie,
# or gone), looking every 2 ms; undef if it still lives after poll_until's
# time.
sub dead_at
{
	my ($pid) = @_;
	my $until = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $until)
	{
		my $stat;
		if (!open(my $fh, '<', "/proc/$pid/stat"))
		{
			return time;
		}
		else
		{
			$stat = <$fh>;
		}
		return time if !defined $stat || $stat =~ /^\d+ \(.*\) [ZX] /s;
		usleep(2_000);
	}
	return undef;
}

# Process $pid's ids from /proc/PID/stat: a hash of state, ppid, pgrp,
# session and comm; undef once it is gone.
sub process_ids
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/stat") or return undef;
	my $stat = <$fh>;
	return undef
	  unless defined $stat && $stat =~ /^\d+ \((.*)\) (\S) (\d+) (\d+) (\d+) /s;
	return { comm => $1, state => $2, ppid => $3, pgrp => $4, session => $5 };
}

# The processes of process group $pgid that are not zombies.
sub group_pids
{
	my ($pgid) = @_;
	my @pids;
	opendir(my $proc, '/proc') or die "/proc: $!";
	for my $pid (grep { /^\d+$/ } readdir $proc)
	{
		my $ids = process_ids($pid);
		push @pids, $pid if $ids && $ids->{pgrp} == $pgid && $ids->{state} !~ /[ZX]/;
	}
	closedir $proc;
	# An array, not sort's value: callers count it too.
	my @sorted = sort { $a <=> $b } @pids;
	return @sorted;
}

# When process group $pgid was first seen empty (zombies aside), looking
# every 2 ms; undef if a process of it still lives after poll_until's time.
sub group_gone_at
{
	my ($pgid) = @_;
	my $until = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $until)
	{
		return time unless group_pids($pgid);
		usleep(2_000);
	}
	return undef;
}

# The pid of dlock $run's watchdog (its child named "dlock watchdog"),
# once there is one; undef if none shows within poll_until's time.
sub watchdog_of
{
	my ($run) = @_;
	my $found;
	poll_until(sub {
		opendir(my $proc, '/proc') or die "/proc: $!";
		for my $pid (grep { /^\d+$/ } readdir $proc)
		{
			my $ids = process_ids($pid);
			$found = $pid
			  if $ids && $ids->{ppid} == $run->{pid} && $ids->{comm} eq 'dlock watchdog';
		}
		closedir $proc;
		return defined $found;
	});
	return $found;
}

# The seconds since the epoch of a timestamptz text, as $node reads it.
sub epoch_of
{
	my ($node, $timestamptz) = @_;
	return $node->safe_psql('postgres',
		"SELECT extract(epoch FROM '$timestamptz'::timestamptz)");
}

1;
