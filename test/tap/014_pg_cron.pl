# The documented scheduled sweep, run by pg_cron (Debian package
# postgresql-15-cron) with the postgresql.conf lines of
# docs/operations/pg_cron.md: pg_cron's jobs live in database
# postgres, dlock in database app. A role with EXECUTE on dlock.sweep and
# nothing else sweeps the old rows and keeps the live ones; a role without
# the grant gets a failed run with the permission error; pg_cron's own
# history is cleaned by a job of its own. pg_cron starts jobs on the
# minute: the test waits for the first runs, about a minute.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
die 'pg_cron is not installed (Debian package postgresql-15-cron)'
  unless -e "$pkglibdir/pg_cron.so";

my ($conf) = doc_text('docs/operations/pg_cron.md') =~ /```ini\n(.*?)```/s
  or die 'docs/operations/pg_cron.md has no ini block';
like($conf, qr/^cron\.use_background_workers = on$/m,
	'the pg_cron page runs jobs in background workers: the node listens on a unix socket only');
my $node = new_node('cron', conf => $conf);
$node->safe_psql('postgres', 'CREATE EXTENSION pg_cron; CREATE DATABASE app');
create_dlock($node, db => 'app');

sub app { return $node->safe_psql('app', $_[0]) }

# The roles of the pg_cron page: one that may sweep, one that may not.
app(q{
CREATE ROLE dlock_sweeper LOGIN;
GRANT EXECUTE ON FUNCTION dlock.sweep(interval) TO dlock_sweeper;
CREATE ROLE app_reader LOGIN});
is( sqlstate_of($node, 'app',
		q{SET ROLE dlock_sweeper; SELECT dlock.force_release('x', 'not yours')}),
	'42501', 'the sweeping role may not force-release');

# Leases in every state. Old (a sweep with older_than '0 s' deletes them):
# two released, one expired with no lock-delay. Kept: one held, one inside
# its lock-delay, one released inside its min_hold.
my %token;
for my $name (qw(done-1 done-2))
{
	$token{$name} = grant_token($node, $name, 'worker', db => 'app');
	is(app(qq{SELECT dlock.release('$name', $token{$name})}), 't', "$name released");
}
$token{live} = grant_token($node, 'live', 'worker', db => 'app');
for my $lease (
	[ 'lapsed', q{'1 s'} ],
	[ 'delayed', q{'1 s', lock_delay => '1 h'} ],
	[ 'early', q{'1 h', min_hold => '1 h'} ])
{
	my ($name, $terms) = @$lease;
	$token{$name} = app(qq{SELECT token FROM dlock.try_acquire('$name', $terms, owner => 'worker')});
}
is(app(qq{SELECT dlock.release('early', $token{early})}), 't', 'early released');
$node->poll_query_until('app', q{
	SELECT count(*) = 2 FROM dlock.leases
	 WHERE (name, state) IN (('lapsed', 'expired'), ('delayed', 'lock-delay'))})
  or die 'the 1 s leases never expired';

my $rows_sql = q{SELECT name, token, state FROM dlock.leases ORDER BY name};
is( app($rows_sql),
	join("\n",
		"delayed|$token{delayed}|lock-delay", "done-1|$token{'done-1'}|released",
		"done-2|$token{'done-2'}|released", "early|$token{early}|released-early",
		"lapsed|$token{lapsed}|expired", "live|$token{live}|held"),
	'before the sweep: a row per lease');

# Scheduled by the superuser for each role, every minute; the history
# cleaning as on the pg_cron page, run as the superuser in database postgres.
$node->safe_psql('postgres', q{
SELECT cron.schedule_in_database('dlock-sweep', '* * * * *',
                                 $$SELECT dlock.sweep('0 s')$$, 'app', 'dlock_sweeper');
SELECT cron.schedule_in_database('sweep-without-grant', '* * * * *',
                                 $$SELECT dlock.sweep('0 s')$$, 'app', 'app_reader');
SELECT cron.schedule('cron-history', '* * * * *',
                     $$DELETE FROM cron.job_run_details WHERE end_time < now() - interval '7 days'$$)});
is( $node->safe_psql('postgres',
		q{SELECT jobname, database, username FROM cron.job ORDER BY jobid}),
	"dlock-sweep|app|dlock_sweeper\nsweep-without-grant|app|app_reader\n"
	  . 'cron-history|postgres|' . getpwuid($<),
	'the jobs run in database app as each role, the cleaning as the superuser');

is(cron_run($node, 'dlock-sweep'), 'succeeded|SELECT 1',
	'the sweep ran and succeeded; pg_cron records the command tag');
is( cron_run($node, 'sweep-without-grant'),
	'failed|ERROR: permission denied for function sweep',
	'without EXECUTE on dlock.sweep the run fails with the permission error');
is(cron_run($node, 'cron-history'), 'succeeded|DELETE 0',
	'the history cleaning ran (nothing a week old yet)');
note $node->safe_psql('postgres', q{
	SELECT j.jobname, d.username, d.database, d.status, d.return_message
	  FROM cron.job_run_details AS d JOIN cron.job AS j USING (jobid)
	 ORDER BY d.runid}, extra_params => [ '-P', 'format=aligned', '-P', 'tuples_only=off' ]);

is( app($rows_sql),
	join("\n",
		"delayed|$token{delayed}|lock-delay", "early|$token{early}|released-early",
		"live|$token{live}|held"),
	'after the sweep: the old rows are gone, the held and unavailable ones kept');
is( app(q{SELECT token FROM dlock.try_acquire('done-1', '1 h', 'worker')}),
	$token{early} + 1, 'tokens go on from the sequence, not the rows');

# By job id: unschedule by name finds only the caller's own jobs.
is( $node->safe_psql('postgres', q{
		SELECT cron.unschedule(jobid) FROM cron.job WHERE jobname = 'dlock-sweep'}),
	't', 'the superuser unschedules the sweep by its job id');
is($node->safe_psql('postgres', q{SELECT count(*) FROM cron.job WHERE jobname = 'dlock-sweep'}),
	'0', 'the sweep is no longer scheduled');
$node->stop;
done_testing();
