# A grant whose commit waits for a synchronous standby that is down:
#  - statement_timeout does not end that wait (PostgreSQL stops the
#    statement's timer before the commit): dlock run waits, and once the
#    standby is back its grant is an ordinary one, COMMAND runs;
#  - pg_cancel_backend ends it: the server commits locally and says so in
#    a WARNING; dlock run says the grant was not confirmed by the
#    synchronous standbys, releases it and exits 125 without starting
#    COMMAND, and dlock acquire exits 1 and prints no token, the lease
#    released as well;
#  - dlock renew cancelled the same way exits 1: no renewal;
#  - the keeper of dlock run takes a cancelled renewal for none: its local
#    deadline stays, and COMMAND is stopped at it although the primary
#    holds the lease for longer.
# dlock is the one on the PATH (scripts/test.sh installs it).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use DlockRun;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = new_node('primary', init => { allows_streaming => 1 });
create_dlock($primary);
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;
# The standby connects as application "standby".
$primary->append_conf('postgresql.conf', "synchronous_standby_names = 'standby'");
$primary->reload;
$primary->poll_query_until('postgres',
	q{SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby'})
  or die 'the standby never became synchronous';
$standby->stop;

my %pg_env = (PGHOST => $primary->host, PGPORT => $primary->port, PGDATABASE => 'postgres');

# The lease $name as "token|state".
sub lease { return lease_columns($primary, $_[0], qw(token state)); }

# The pid of the session whose statement calls $function for lease $name
# once it waits for the synchronous standby; dies if it never does.
sub waiting_for_standby
{
	my ($function, $name) = @_;
	my $pid;
	poll_until(
		sub {
			$pid = $primary->safe_psql('postgres', qq{
				SELECT pid FROM pg_stat_activity
				 WHERE wait_event = 'SyncRep' AND query LIKE '%dlock.$function(%'
				   AND pid <> pg_backend_pid()});
			return $pid ne '';
		}) or die "no $function of $name waited for the standby";
	return $pid;
}

# What dlock prints on stderr when the $call (grant or renewal) of $name
# with $token was cancelled: the server's WARNING as libpq prints it, then
# dlock's line.
sub not_confirmed
{
	my ($name, $token, $call) = @_;
	return "WARNING:  canceling wait for synchronous replication due to user request\n"
	  . 'DETAIL:  The transaction has already committed locally, but might not have been '
	  . "replicated to the standby.\n"
	  . "dlock: 01000: lease $name: the $call of token $token was not confirmed by the "
	  . 'synchronous standbys (canceling wait for synchronous replication due to user '
	  . 'request)' . ($call eq 'grant' ? '; released it' : '')
	  . ' (The transaction has already committed locally, but might not have been '
	  . "replicated to the standby.)\n";
}

# ------------------------------------------------ statement_timeout

my $r = start_run(
	name    => 'timed',
	options => [ '--ttl', '30s', '--kill-after', '1s' ],
	script  => q{record_env; mark ran},
	env     => { %pg_env, PGOPTIONS => '-c statement_timeout=200ms' });
my $pid = waiting_for_standby('try_acquire', 'timed');
ok( poll_until(
		sub {
			$primary->safe_psql('postgres', qq{
				SELECT clock_timestamp() - query_start > interval '2 s'
				  FROM pg_stat_activity WHERE pid = $pid AND wait_event = 'SyncRep'}) eq 't';
		}),
	'statement_timeout (200 ms) does not end the wait for the standby (still waiting after 2 s)');
is(run_exit_code($r, 1), undef, 'dlock run is still waiting');
is(marker($r, 'ran'), undef, 'COMMAND has not started');
$standby->start;
is(run_exit_code($r), 0, 'the standby back: the grant is confirmed, COMMAND ran');
my $env = read_env($r);
is(lease('timed'), "$env->{token}|released", 'and the lease was released after it');
is(run_stderr($r), '', 'nothing on stderr');
$primary->poll_query_until('postgres',
	q{SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby'})
  or die 'the standby never became synchronous again';
$standby->stop;

# ------------------------------------------------ pg_cancel_backend: dlock run

$r = start_run(
	name    => 'cancelled',
	options => [ '--ttl', '30s', '--kill-after', '1s' ],
	script  => q{record_env; mark ran},
	env     => \%pg_env);
$pid = waiting_for_standby('try_acquire', 'cancelled');
is($primary->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', 'the wait cancelled');
is(run_exit_code($r), 125, 'dlock run exits 125');
my ($token, $state) = split /\|/, lease('cancelled');
is($state, 'released', 'the grant is released on the primary');
is(run_stderr($r), not_confirmed('cancelled', $token, 'grant'),
	'dlock says the grant was not confirmed and released');
is(marker($r, 'ran'), undef, 'COMMAND never ran');
ok(!-e "$r->{dir}/env", 'COMMAND never started');

# The same with --wait: the grant comes from dlock.acquire.
$r = start_run(
	name    => 'cancelled',
	options => [ '--ttl', '30s', '--kill-after', '1s', '--wait', '10s' ],
	script  => q{record_env; mark ran},
	env     => \%pg_env);
$pid = waiting_for_standby('acquire', 'cancelled');
$primary->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
is(run_exit_code($r), 125, 'dlock run --wait exits 125');
is(lease('cancelled'), ($token + 1) . '|released', 'the next grant, released');
is(run_stderr($r), not_confirmed('cancelled', $token + 1, 'grant'), 'and says so');
ok(!-e "$r->{dir}/env", 'COMMAND never started');

# ------------------------------------------------ dlock acquire and renew

# dlock with these arguments in the background; returns the harness and
# its stdout and stderr (references).
sub start_dlock
{
	my @args = @_;
	my ($out, $err) = ('', '');
	local %ENV = (%ENV, %pg_env);
	my $h = IPC::Run::start([ 'dlock', @args ], '<', \undef, '>', \$out, '2>', \$err);
	return ($h, \$out, \$err);
}

my ($h, $out, $err) = start_dlock('acquire', '--ttl', '30s', 'scripted');
$pid = waiting_for_standby('try_acquire', 'scripted');
$primary->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
$h->finish;
is($h->result(0), 1, 'dlock acquire exits 1');
is($$out, '', 'and prints no token');
($token, $state) = split /\|/, lease('scripted');
is($state, 'released', 'the grant is released on the primary');
is($$err, not_confirmed('scripted', $token, 'grant'), 'dlock acquire says why');

# A grant made while the standby was up, renewed while it is down.
$standby->start;
$primary->poll_query_until('postgres',
	q{SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby'})
  or die 'the standby never became synchronous again';
my $held = $primary->safe_psql('postgres',
	q{SELECT token FROM dlock.try_acquire('renewed', '1 min', 'script')});
my $expiry = $primary->safe_psql('postgres',
	q{SELECT expires_at FROM dlock.leases WHERE name = 'renewed'});
$standby->stop;
($h, $out, $err) = start_dlock('renew', '--ttl', '5min', 'renewed', $held);
$pid = waiting_for_standby('renew', 'renewed');
$primary->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
$h->finish;
is($h->result(0), 1, 'dlock renew exits 1');
is($$out, '', 'and prints no validity');
is($$err, not_confirmed('renewed', $held, 'renewal'), 'dlock renew says why');
is( $primary->safe_psql('postgres',
		qq{SELECT state, expires_at > '$expiry'::timestamptz FROM dlock.leases WHERE name = 'renewed'}),
	'held|t', 'the renewal did commit on the primary: only the standby may lack it');

# ------------------------------------------------ the keeper's renewals

# dlock run holds a lease granted while the standby was up; then every
# renewal its keeper sends waits for the standby and is cancelled. Each
# moves the expiry on the primary, none moves the keeper's deadline: the
# lease is lost there, COMMAND stopped while the primary holds it still.
$standby->start;
$primary->poll_query_until('postgres',
	q{SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby'})
  or die 'the standby never became synchronous again';
$r = start_run(
	name    => 'kept',
	options => [ '--ttl', '6s', '--kill-after', '1s', '--verbose' ],
	script  => TRAP_TERM . q{
record_env; linger},
	env => \%pg_env);
$env = read_env($r);
$standby->stop;
my $cancelled = 0;
poll_until(
	sub {
		$cancelled += $primary->safe_psql('postgres', q{
			SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity
			 WHERE wait_event = 'SyncRep' AND query LIKE '%dlock.renew(%'});
		return defined run_exit_code($r, 1);
	});
is(run_exit_code($r), 76, 'dlock run exits 76: the lease is lost');
ok($cancelled > 0, "renewals cancelled ($cancelled)");
like(run_stderr($r), qr/^dlock: lease kept lost: not renewed in time \(/m,
	'lost at the local deadline');
my $term = marker($r, 'term');
ok(defined $term, 'COMMAND got SIGTERM');
my $server_expiry = $primary->safe_psql('postgres',
	q{SELECT extract(epoch FROM expires_at) FROM dlock.leases WHERE name = 'kept'});
cmp_ok($term, '<', $server_expiry,
	'before the expiry the cancelled renewals left on the primary');
cmp_ok($server_expiry, '>', epoch_of($primary, $env->{expires_at}),
	'which they had moved past the grant\'s');

# Backends still waiting for the standby end with the server.
$primary->stop('immediate');
done_testing();
