# dlock run's watchdog: COMMAND's whole process group is dead before the
# server's expiry of the lease, whatever happens to dlock itself:
#  - dlock stopped (SIGSTOP), alone or with its whole process group: the
#    watchdog, in a session of its own, stops COMMAND at the local deadline;
#  - a renewal that hangs (the keeper's backend stopped): COMMAND stopped
#    at the local deadline;
#  - the watchdog killed: dlock takes the lease as lost, stops COMMAND and
#    exits 76;
#  - dlock, its watchdog and COMMAND stopped past the expiry (a paused
#    machine): the watchdog, resumed, kills COMMAND's group at once;
#  - dlock killed (SIGKILL) while COMMAND's shell waits for its foreground
#    `sleep`: the whole group dies, not only the shell.
# Each case but the paused machine finds the group gone (looking every 2 ms) before the lease's
# expires_at as the server has it then, on the server's clock, and another
# owner is granted the lease only after that.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use DlockRun;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = new_node('watchdog');
create_dlock($node);
# PGAPPNAME unset: dlock names its sessions (the hanging case finds its
# keeper's so).
my %direct = (PGHOST => $node->host, PGPORT => $node->port, PGDATABASE => 'postgres',
	PGAPPNAME => undef);

# COMMAND ignoring SIGTERM (a witness in its group marks term): only SIGKILL
# ends it, so the group is gone only once the watchdog's SIGKILL came.
my $ignores = IGNORE_TERM . q{
record_env; linger};
# COMMAND ending on SIGTERM.
my $holds = TRAP_TERM . q{
record_env; linger};

# ttl 3s, kill-after 500ms: the local deadline is at most the expiry less
# 250 ms, kill-after and 1% of the validity; SIGKILL comes kill-after later.
my @terms = ('--ttl', '3s', '--kill-after', '500ms');

# The lease $name as the server has it: a hash of token, state, expires_at
# (seconds since the epoch) and renew_count.
sub lease
{
	my ($name) = @_;
	my @v = split /\|/, $node->safe_psql('postgres', qq{
		SELECT token, state, extract(epoch FROM expires_at), renew_count
		  FROM dlock.leases WHERE name = '$name'}), -1;
	my %l;
	@l{qw(token state expires_at renew_count)} = @v;
	return \%l;
}

# Waits until the keeper has renewed lease $name once more: the next
# renewal is then a third of the ttl away, and none is in flight.
sub after_renewal
{
	my ($name) = @_;
	my $count = lease($name)->{renew_count};
	poll_until(sub { lease($name)->{renew_count} > $count })
	  or die "lease $name was not renewed";
	return;
}

# Another owner's try_acquire of $name, until it is granted: the server's
# clock at the grant (seconds since the epoch), and the token.
sub taken_over
{
	my ($name) = @_;
	my $got;
	poll_until(sub {
		$got = $node->safe_psql('postgres', qq{
			SELECT extract(epoch FROM acquired_at) || '|' || token
			  FROM dlock.try_acquire('$name', '1 minute', 'other')});
		return $got ne '';
	}) or die "lease $name was never granted to another owner";
	return split /\|/, $got;
}

sub ms { return sprintf('%.0f ms', 1000 * $_[0]) }

# The group of COMMAND ($env->{pid}, its leader) gone before the expiry, and
# the lease granted to another owner only after that. Returns when the
# group was seen gone, and the lease then.
sub check_gone_before_expiry
{
	my ($case, $name, $env) = @_;
	my $gone = group_gone_at($env->{pid});
	ok(defined $gone, "$case: COMMAND's process group is gone");
	# Read once the group is gone: the expiry nobody could be granted the
	# lease before.
	my $l = lease($name);
	is("$l->{token}|$l->{state}", "$env->{token}|held", "$case: the grant still held then");
	cmp_ok($gone, '<', $l->{expires_at}, "$case: COMMAND was dead before the expiry");
	note("$case: COMMAND's group gone " . ms($l->{expires_at} - $gone) . ' before the expiry');
	my ($acquired_at, $token) = taken_over($name);
	is($token, $env->{token} + 1, "$case: another owner then got the next token");
	cmp_ok($acquired_at, '>', $gone, "$case: only after COMMAND was dead");
	return ($gone, $l);
}

# ------------------------------------------------ dlock stopped

my $r = start_run(name => 'stopped', options => \@terms, script => $ignores, env => \%direct);
my $env = read_env($r);
after_renewal('stopped');
kill 'STOP', $r->{pid};
my $term = wait_marker($r, 'term');
my ($gone) = check_gone_before_expiry('dlock stopped', 'stopped', $env);
cmp_ok($gone - $term, '>=', 0.5 - 0.05, 'dlock stopped: SIGKILL came kill-after after SIGTERM');
kill 'CONT', $r->{pid};
is(run_exit_code($r), 76, 'dlock stopped: resumed, dlock exits 76');
is( run_stderr($r),
	"dlock: lease stopped lost: not renewed in time (no renewal failed: this process was paused or starved)\n",
	'dlock stopped: the lease was not renewed in time');

# ------------------------------------------------ dlock's process group stopped

$r = start_run(name => 'group-stopped', options => \@terms, script => $ignores,
	env => \%direct, own_group => 1);
$env = read_env($r);
my $watchdog = watchdog_of($r);
ok(defined $watchdog, 'dlock has a watchdog');
my $ids = process_ids($watchdog);
is("$ids->{pgrp}|$ids->{session}", "$watchdog|$watchdog",
	'which leads a session and process group of its own');
after_renewal('group-stopped');
kill 'STOP', -$r->{pid};
check_gone_before_expiry("dlock's group stopped", 'group-stopped', $env);
kill 'CONT', -$r->{pid};
is(run_exit_code($r), 76, "dlock's group stopped: resumed, dlock exits 76");
is( run_stderr($r),
	"dlock: lease group-stopped lost: not renewed in time (no renewal failed: this process was paused or starved)\n",
	"dlock's group stopped: the lease was not renewed in time");

# ------------------------------------------------ a renewal hangs

# The keeper's backend stopped: its next renewal is sent and never
# answered.
$r = start_run(name => 'hang', options => [ @terms, '--owner', 'hanging' ],
	script => $ignores, env => \%direct);
$env = read_env($r);
after_renewal('hang');
my $backend = $node->safe_psql('postgres', q{
	SELECT pid FROM pg_stat_activity WHERE application_name = 'dlock keeper hang (hanging)'});
like($backend, qr/^\d+$/, "a renewal hangs: the keeper's backend found");
my $renewals = lease('hang')->{renew_count};
kill 'STOP', $backend;
my (undef, $l) = check_gone_before_expiry('a renewal hangs', 'hang', $env);
is($l->{renew_count}, $renewals, 'a renewal hangs: none reached the lease since the stop');
is(run_exit_code($r), 76, 'a renewal hangs: dlock exits 76');
is( run_stderr($r),
	"dlock: lease hang lost: not renewed in time (the last renewal got no answer)\n",
	'a renewal hangs: its renewal got no answer');
kill 'CONT', $backend;

# ------------------------------------------------ the watchdog killed

$r = start_run(name => 'no-watchdog', options => \@terms, script => $holds, env => \%direct);
$env = read_env($r);
$watchdog = watchdog_of($r);
kill 'KILL', $watchdog;
wait_marker($r, 'term');
check_gone_before_expiry('the watchdog killed', 'no-watchdog', $env);
is(run_exit_code($r), 76, 'the watchdog killed: dlock exits 76');
is(run_stderr($r), "dlock: lease no-watchdog lost: its watchdog was killed by signal 9\n",
	'the watchdog killed: dlock says so');

# ------------------------------------------------ the machine paused

# dlock, its watchdog and COMMAND all stopped, as a paused machine stops
# them, until the server has expired the lease. The watchdog, resumed
# alone, finds the deadline and the grace passed: SIGKILL at once, which
# kills COMMAND's group while it is still stopped, so COMMAND never runs
# again.
$r = start_run(name => 'paused', options => \@terms, script => $ignores, env => \%direct);
$env = read_env($r);
$watchdog = watchdog_of($r);
after_renewal('paused');
kill 'STOP', $r->{pid}, $watchdog, -$env->{pid};
ok(poll_until(sub { lease('paused')->{state} eq 'expired' }), 'all paused: the lease expires');
my $resumed_at = time;
kill 'CONT', $watchdog;
$gone = group_gone_at($env->{pid});
ok(defined $gone, 'the watchdog resumed: COMMAND\'s group is gone');
note('the watchdog resumed past the expiry: COMMAND\'s group gone ' . ms($gone - $resumed_at) . ' after');
ok(!defined marker($r, 'term'), 'by SIGKILL, without being resumed: no SIGTERM was handled');
kill 'CONT', $r->{pid};
is(run_exit_code($r), 76, 'all paused: dlock, resumed, exits 76');
is( run_stderr($r),
	"dlock: lease paused lost: not renewed in time (no renewal failed: this process was paused or starved)\n",
	'all paused: the lease was not renewed in time');

# ------------------------------------------------ dlock killed

# COMMAND is a shell waiting for its foreground sleep: dlock's death must
# end both, and the marker after the sleep is never written.
$r = start_run(name => 'killed', options => \@terms, env => \%direct,
	script => q{record_env; exec sh -c 'sleep 60; touch "$1/after-sleep"' sh "$DIR"});
$env = read_env($r);
ok(poll_until(sub { group_pids($env->{pid}) == 2 }), "dlock killed: COMMAND's shell and its sleep run");
$watchdog = watchdog_of($r);
kill 'KILL', $r->{pid};
is(run_exit_code($r), 128 + 9, 'dlock killed by SIGKILL');
check_gone_before_expiry('dlock killed', 'killed', $env);
ok(!-e "$r->{dir}/after-sleep", 'dlock killed: the sleep never ended on its own');
ok(defined dead_at($watchdog), 'dlock killed: the watchdog ended too');

$node->stop;
done_testing();
