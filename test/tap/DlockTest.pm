# Set-up and helpers shared by dlock's TAP tests: nodes, dlock with the
# tables the tests write, grants, SQLSTATEs, unflushed WAL, clients in the
# background, waiters in acquire's queue, PgBouncer, pg_cron's job runs and
# Prometheus's PostgreSQL exporter.
package DlockTest;

use strict;
use warnings;
use Cwd;
use Exporter 'import';
use File::Basename;
use File::Spec;
use HTTP::Tiny;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(usleep clock_gettime CLOCK_MONOTONIC);

our @EXPORT = qw(
  FIRST_NEW_EPOCH_TOKEN WAL_NOT_FLUSHED_SQL
  new_node create_dlock grant_token sqlstate_of unflushed_after
  lease_rows held_rows poll_until
  start_client finish_client wait_queued
  start_pgbouncer stop_pgbouncer pgbouncer_show
  new_faketime_node set_clock_offset clock_skew lease_columns
  doc_text cron_run
  start_exporter scrape stop_exporter
);

# The first token issued on a new history (a promoted standby, a
# point-in-time recovery, a restored dump) by a database whose sequence
# stood below 2^40: the sequence jumps to 2 * 2^40 (see src/core/tokens.h).
use constant FIRST_NEW_EPOCH_TOKEN => (2 << 40) + 1;

# Bytes of WAL inserted but not yet flushed.
use constant WAL_NOT_FLUSHED_SQL =>
  'SELECT pg_current_wal_insert_lsn() - pg_current_wal_flush_lsn()';

# A slow WAL writer and no background writes, so that a commit that does
# not flush its own WAL stays unflushed long enough to be seen, and is lost
# in a crash.
my $slow_wal_writer = q{
wal_writer_delay = 10s
wal_writer_flush_after = 0
autovacuum = off
checkpoint_timeout = 1h
};

# A new node named $name, initialised and started. Options: init (a hash of
# PostgreSQL::Test::Cluster::init options), slow_wal_writer (true: the
# settings above), conf (more postgresql.conf lines), start (false: leave
# it stopped).
sub new_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%{ $opt{init} // {} });
	$node->append_conf('postgresql.conf', $slow_wal_writer)
	  if $opt{slow_wal_writer};
	$node->append_conf('postgresql.conf', $opt{conf}) if defined $opt{conf};
	$node->start if $opt{start} // 1;
	return $node;
}

# CREATE EXTENSION dlock in database db ('postgres' unless given), and
# what the options ask for:
#   fenced => { table, column, value, rows }: a table (id int PRIMARY KEY,
#     <column> text NOT NULL, fence_token bigint NOT NULL DEFAULT 0) with
#     ids 1 .. rows, <column> = value;
#   protect => true: the fenced table gets dlock.protect();
#   plain => name: a table (x int) for writes nobody fences;
#   checkpoint => true: a CHECKPOINT afterwards.
sub create_dlock
{
	my ($node, %opt) = @_;
	my $sql = "CREATE EXTENSION dlock;\n";
	if (my $f = $opt{fenced})
	{
		$sql .= qq{CREATE TABLE $f->{table} (id int PRIMARY KEY, $f->{column} text NOT NULL,
                   fence_token bigint NOT NULL DEFAULT 0);
INSERT INTO $f->{table} (id, $f->{column})
SELECT g, '$f->{value}' FROM generate_series(1, $f->{rows}) AS g;
};
		$sql .= "SELECT dlock.protect('$f->{table}');\n" if $opt{protect};
	}
	$sql .= "CREATE TABLE $opt{plain} (x int);\n" if $opt{plain};
	$sql .= "CHECKPOINT;\n" if $opt{checkpoint};
	$node->safe_psql($opt{db} // 'postgres', $sql);
	return;
}

# The token of dlock.try_acquire($name, '1 h', $owner) on $node, '' when
# it is refused. Options: db ('postgres' unless given), before (SQL run
# first in the same session, e.g. SET ROLE).
sub grant_token
{
	my ($node, $name, $owner, %opt) = @_;
	return $node->safe_psql($opt{db} // 'postgres',
		($opt{before} // '')
		  . qq{\nSELECT token FROM dlock.try_acquire('$name', '1 h', '$owner')});
}

# The SQLSTATE of the error $sql raises in database $db of $node, '' if
# it raises none.
sub sqlstate_of
{
	my ($node, $db, $sql) = @_;
	my ($out, $err) = ('', '');
	$node->psql($db, "\\set VERBOSITY sqlstate\n$sql",
		stdout => \$out, stderr => \$err);
	return $err =~ /ERROR:  ([0-9A-Z]{5})/ ? $1 : '';
}

# The output lines of $sql, then how many bytes of WAL are still not
# flushed right after it (in the same session), on database postgres.
# The measuring query runs once before $sql too, silently: looking up its
# functions may prune a catalog page, WAL that would otherwise be written
# after $sql and counted against it.
sub unflushed_after
{
	my ($node, $sql) = @_;
	my $warm_up = 'DO $$BEGIN PERFORM ' . WAL_NOT_FLUSHED_SQL =~ s/^SELECT //r . '; END$$';
	return split /\n/,
	  $node->safe_psql('postgres', "$warm_up;\n$sql;\n" . WAL_NOT_FLUSHED_SQL);
}

# Every lease on $node as "name|token|owner|state" lines, in token order.
sub lease_rows
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT name, token, owner, state FROM dlock.leases ORDER BY token});
}

# The lines lease_rows() gives when every lease in %$acked (name =>
# [token, owner]) is held, and no other lease exists.
sub held_rows
{
	my ($acked) = @_;
	return join "\n", map { "$_|$acked->{$_}[0]|$acked->{$_}[1]|held" }
	  sort { $acked->{$a}[0] <=> $acked->{$b}[0] } keys %$acked;
}

# Calls $code every 0.1 s until it returns true, for at most
# $PostgreSQL::Test::Utils::timeout_default seconds; its last result.
sub poll_until
{
	my ($code) = @_;
	my $result;
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		last if $result = $code->();
		usleep(100_000);
	}
	return $result;
}

# psql running $sql in the background, connected with $connstr as
# application $app, errors reported with their SQLSTATE and DETAIL.
sub start_client
{
	my ($connstr, $app, $sql) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-At', '-v', 'VERBOSITY=verbose',
		  '-d', "$connstr application_name=$app", '-c', $sql ],
		'>', \$out, '2>', \$err);
	return { h => $h, out => \$out, err => \$err, started => clock_gettime(CLOCK_MONOTONIC) };
}

# Its output (stdout, then stderr) once it has finished, and the seconds
# it ran.
sub finish_client
{
	my ($c) = @_;
	$c->{h}->finish;
	return (${ $c->{out} } . ${ $c->{err} }, clock_gettime(CLOCK_MONOTONIC) - $c->{started});
}

# Waits until the server session of application $app is queued in
# dlock.acquire for a lease: at the head ($head true) or behind it.
sub wait_queued
{
	my ($node, $app, $head) = @_;
	my $granted = $head ? 'true' : 'false';
	$node->poll_query_until('postgres', qq{
		SELECT count(*) = 1 FROM pg_locks AS l JOIN pg_stat_activity AS a USING (pid)
		 WHERE a.application_name = '$app' AND l.locktype = 'advisory'
		   AND l.objsubid = 4 AND l.granted = $granted})
	  or die "$app never queued:\n" . $node->safe_psql('postgres',
		q{SELECT a.application_name, a.state, a.wait_event, l.objsubid, l.mode, l.granted
		    FROM pg_stat_activity AS a LEFT JOIN pg_locks AS l
		      ON l.pid = a.pid AND l.locktype = 'advisory'
		   WHERE a.backend_type = 'client backend'});
	return;
}

# PgBouncer handles still running, stopped when the test exits.
my @pgbouncers;
END { $_->kill_kill for grep { $_->pumpable } @pgbouncers; }

# PgBouncer in front of database postgres of $node, in transaction mode,
# with at most pool_size (1 unless given) server connections and
# max_client_conn (PgBouncer's default, 100, unless given) clients. It listens
# on a unix socket only, in a directory of its own: no TCP port to collide
# with (Debian's own pgbouncer service may hold 6432 on localhost), so a
# fixed port number does. Once it accepts connections, returns a hash:
# connstr (database postgres through it, for psql's -d), admin (its admin
# console, for pgbouncer_show), handle (its IPC::Run handle) and pid (its
# process id, for SIGSTOP).
sub start_pgbouncer
{
	my ($node, %opt) = @_;
	# Debian installs pgbouncer in /usr/sbin, which a user's PATH may lack.
	my ($pgbouncer) = grep { -x $_ } map { "$_/pgbouncer" }
	  File::Spec->path, '/usr/sbin';
	die 'pgbouncer is not installed (Debian package pgbouncer)' unless $pgbouncer;

	my $dir = PostgreSQL::Test::Utils::tempdir_short();
	my $port = 6432;
	my $user = getpwuid($<);
	my $log = Cwd::abs_path($PostgreSQL::Test::Utils::log_path) . '/'
	  . File::Basename::basename($0, '.pl') . '_pgbouncer_' . (@pgbouncers + 1) . '.log';
	my $pool_size = $opt{pool_size} // 1;
	my $max_client_conn = $opt{max_client_conn} // 100;
	PostgreSQL::Test::Utils::append_to_file("$dir/userlist.txt", qq{"$user" ""\n});
	my $server = 'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres';
	PostgreSQL::Test::Utils::append_to_file("$dir/pgbouncer.ini", qq{
[databases]
postgres = $server

[pgbouncer]
unix_socket_dir = $dir
listen_port = $port
auth_type = trust
auth_file = $dir/userlist.txt
admin_users = $user
pool_mode = transaction
default_pool_size = $pool_size
max_client_conn = $max_client_conn
logfile = $log
pidfile = $dir/pgbouncer.pid
});

	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ $pgbouncer, "$dir/pgbouncer.ini" ], '>', \$out, '2>', \$err);
	push @pgbouncers, $h;
	my %bouncer = (
		connstr => "host=$dir port=$port dbname=postgres",
		admin => "host=$dir port=$port dbname=pgbouncer",
		handle => $h);
	my $ready = poll_until(sub {
		return 1 if $node->psql('postgres', 'SELECT 1',
			extra_params => [ '-d', $bouncer{connstr} ]) == 0;
		$h->pump_nb;    # reads its output, so that an exit is seen
		die "PgBouncer exited:\n$err" unless $h->pumpable;
		return 0;
	});
	die "PgBouncer did not accept connections:\n$err" unless $ready;
	($bouncer{pid}) = PostgreSQL::Test::Utils::slurp_file("$dir/pgbouncer.pid") =~ /(\d+)/;
	return \%bouncer;
}

# Stops a PgBouncer start_pgbouncer started.
sub stop_pgbouncer
{
	my ($bouncer) = @_;
	$bouncer->{handle}->signal('TERM');
	$bouncer->{handle}->finish;
	return;
}

# The rows of PgBouncer's admin command SHOW $what (POOLS, CLIENTS, ...),
# each a hash by column name.
sub pgbouncer_show
{
	my ($bouncer, $what) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'psql', '-X', '-A', '-F', '|', '-P', 'footer=off',
		  '-d', $bouncer->{admin}, '-c', "SHOW $what" ],
		'>', \$out, '2>', \$err)
	  or die "SHOW $what failed:\n$err";
	my ($header, @lines) = split /\n/, $out;
	my @columns = split /\|/, $header, -1;
	return map { my %row; @row{@columns} = split /\|/, $_, -1; \%row } @lines;
}

# A node whose server reads its wall clock through libfaketime, from an
# offset in a file that set_clock_offset() rewrites; its monotonic clock
# is the real one, as when an administrator or NTP steps a real clock.
# Returns the node, created with dlock; its clock starts at the real time.
my $libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
my %offset_file;
sub new_faketime_node
{
	my ($name) = @_;
	die "libfaketime is not installed (Debian package libfaketime)"
	  unless -e $libfaketime;
	# An absolute path: the server runs in its data directory.
	my $file = Cwd::abs_path(PostgreSQL::Test::Utils::tempdir()) . '/faketime';
	my $node = new_node($name, start => 0);
	$offset_file{$node->name} = $file;
	write_clock_offset($file, '+0');
	{
		local $ENV{LD_PRELOAD} = $libfaketime;
		local $ENV{FAKETIME_TIMESTAMP_FILE} = $file;
		local $ENV{FAKETIME_NO_CACHE} = '1';
		local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
		$node->start;
	}
	create_dlock($node);
	return $node;
}

# Steps $node's wall clock to $offset ('+3600', '-3600', '+0': seconds
# from the real time), and waits until the server reads it there.
sub set_clock_offset
{
	my ($node, $offset) = @_;
	write_clock_offset($offset_file{$node->name}, $offset);
	my $skew_ok = poll_until(sub {
		abs(clock_skew($node) - $offset) < 60;
	});
	die "the server's clock did not step to $offset" unless $skew_ok;
	return;
}

# Replaced whole, so the server never reads half a line.
sub write_clock_offset
{
	my ($file, $offset) = @_;
	PostgreSQL::Test::Utils::append_to_file("$file.new", "$offset\n");
	rename("$file.new", $file) or die "rename: $!";
	return;
}

# How far $node's wall clock is from the test's, in seconds.
sub clock_skew
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		'SELECT extract(epoch FROM clock_timestamp())') - time();
}

# The columns of dlock.leases for lease $name on $node, joined by '|'
# (e.g. lease_columns($node, 'job', qw(token owner state))).
sub lease_columns
{
	my ($node, $name, @columns) = @_;
	my $select = join(q{ || '|' || }, @columns);
	return $node->safe_psql('postgres',
		"SELECT $select FROM dlock.leases WHERE name = '$name'");
}

# The text of the documentation page $path (e.g. 'docs/operations/pg_cron.md'),
# relative to the source tree's root. The test command copies README.md
# and docs/ next to the tests' directory.
sub doc_text
{
	my ($path) = @_;
	return PostgreSQL::Test::Utils::slurp_file(
		File::Basename::dirname(Cwd::abs_path($0)) . "/../$path");
}

# The first finished run of pg_cron's job $job on $node (pg_cron's tables
# in database postgres) as "status|return_message", once there is one:
# pg_cron starts jobs on the minute, so this waits up to a minute and a bit.
sub cron_run
{
	my ($node, $job) = @_;
	my $run = poll_until(sub {
		$node->safe_psql('postgres', qq{
			SELECT d.status || '|' || d.return_message
			  FROM cron.job_run_details AS d JOIN cron.job AS j USING (jobid)
			 WHERE j.jobname = '$job' AND d.status IN ('succeeded', 'failed')
			 ORDER BY d.runid LIMIT 1});
	});
	die "pg_cron's job $job never finished a run" unless $run;
	return $run;
}

# Exporters still running, stopped when the test exits.
my @exporters;
END { $_->kill_kill for grep { $_->pumpable } @exporters; }

# prometheus-postgres-exporter (Debian's) for database postgres of $node,
# connected through its unix socket as $role, with the queries file
# $queries and none of its own metrics, serving /metrics on 127.0.0.1 and
# a free port. Once it answers, returns a hash: url (of /metrics), handle
# (its IPC::Run handle) and log (a reference to its output).
sub start_exporter
{
	my ($node, $role, $queries) = @_;
	my ($exporter) = grep { -x $_ } map { "$_/prometheus-postgres-exporter" }
	  File::Spec->path, '/usr/bin';
	die 'prometheus-postgres-exporter is not installed (Debian package of that name)'
	  unless $exporter;
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $log = '';
	local $ENV{DATA_SOURCE_NAME} = 'host=' . $node->host . ' port=' . $node->port
	  . " user=$role dbname=postgres sslmode=disable";
	my $h = IPC::Run::start(
		[ $exporter, "--web.listen-address=127.0.0.1:$port",
		  "--extend.query-path=$queries", '--disable-default-metrics',
		  '--disable-settings-metrics', '--no-collector.database',
		  '--no-collector.bgwriter' ],
		'>&', \$log);
	push @exporters, $h;
	my %exporter = (url => "http://127.0.0.1:$port/metrics", handle => $h, log => \$log);
	my $ready = poll_until(sub {
		return 1 if HTTP::Tiny->new->get($exporter{url})->{success};
		$h->pump_nb;    # reads its output, so that an exit is seen
		die "the exporter exited:\n$log" unless $h->pumpable;
		return 0;
	});
	die "the exporter did not answer:\n$log" unless $ready;
	return \%exporter;
}

# One scrape of the exporter: a hash from each sample's name and labels,
# as in the exposition format but without the server label the exporter
# adds (e.g. 'dlock_lease_holders{name="job"}'), to its value.
sub scrape
{
	my ($exporter) = @_;
	my $response = HTTP::Tiny->new->get($exporter->{url});
	die "scrape failed: $response->{status} $response->{reason}"
	  unless $response->{success};
	my %samples;
	for (split /\n/, $response->{content})
	{
		next if /^#/;
		my ($series, $value) = /^(.+) (\S+)$/ or die "not a sample: $_";
		if (my ($name, $labels) = $series =~ /^(\w+)\{(.*)\}$/)
		{
			my @kept = grep { !/^server=/ } $labels =~ /(\w+="(?:[^"\\]|\\.)*")/g;
			$series = @kept ? "$name\{" . join(',', @kept) . '}' : $name;
		}
		$samples{$series} = $value;
	}
	return \%samples;
}

# Stops an exporter start_exporter started; its output.
sub stop_exporter
{
	my ($exporter) = @_;
	$exporter->{handle}->signal('TERM');
	$exporter->{handle}->finish;
	return ${ $exporter->{log} };
}

1;
