# dlock's metrics as Prometheus scrapes them: Debian's
# prometheus-postgres-exporter runs monitoring/dlock-queries.yaml as a
# role with pg_monitor and nothing else, against known activity: leases
# held (one shared by two readers), a session queued in dlock.acquire, an
# advisory lock held by a session idle in its transaction and another
# session waiting for it, and known numbers of grants, busy answers and
# releases. Every value scraped is checked: counts exactly, ages and
# expiries within what the server's clock read before and after the scrape.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# The test command copies monitoring/ next to the tests' directory.
my $queries = Cwd::abs_path("$FindBin::RealBin/..") . '/monitoring/dlock-queries.yaml';
die "no $queries: copy monitoring/ next to the tests' directory" unless -e $queries;

my $node = new_node('metrics', conf => "shared_preload_libraries = 'dlock'");
create_dlock($node);
$node->safe_psql('postgres', q{
CREATE ROLE dlock_monitor LOGIN;
GRANT pg_monitor TO dlock_monitor;
CREATE ROLE app LOGIN;
CREATE ROLE outsider LOGIN});
my $app = $node->connstr('postgres') . ' user=app';

sub server { return $node->safe_psql('postgres', $_[0]) }
sub as_app { return $node->safe_psql('postgres', $_[0], extra_params => [ '-U', 'app' ]) }

# The server's clock, in seconds since the epoch.
sub server_now { return server('SELECT extract(epoch FROM clock_timestamp())') }

# try_acquire as role app: token, acquired_at and expires_at (epoch).
sub grant
{
	my ($name, $owner, $terms) = @_;
	return split /\|/, as_app(qq{
		SELECT token, extract(epoch FROM acquired_at), extract(epoch FROM expires_at)
		  FROM dlock.try_acquire('$name', $terms, owner => '$owner')});
}

# ------------------------------------------------ activity

# The migrator's session takes lease report, then goes idle inside a
# transaction holding the advisory lock schema-migration. Its name is
# known to dlock (locked once before, committed).
is( as_app(q{SELECT dlock.advisory_lock('schema-migration', '0 s'),
                    dlock.advisory_unlock('schema-migration')}),
	't|t', 'schema-migration locked and unlocked once: dlock knows its name');
my $migrator = $node->background_psql('postgres', extra_params => [ '-U', 'app' ]);
$migrator->query_safe(q{SET application_name = 'migrator'});
my ($report_token, $report_acquired, $report_expires) = split /\|/, $migrator->query_safe(q{
	SELECT token, extract(epoch FROM acquired_at), extract(epoch FROM expires_at)
	  FROM dlock.try_acquire('report', '1 h', owner => 'report-1')});
is($report_token, '1', 'report granted to the migrator\'s session');
is( $migrator->query_safe(q{BEGIN; SELECT dlock.advisory_lock('schema-migration', xact => true)}),
	't', 'the migrator holds schema-migration in a transaction it leaves open');

# Two readers of cache: the first for 20 min, the second, later, for 10.
my (undef, $reader1_acquired) = grant('cache', 'reader-1', q{'20 min', shared => true});
my (undef, undef, $reader2_expires) = grant('cache', 'reader-2', q{'10 min', shared => true});

# Two grants of batch, each released; three busy answers on report.
my $batch_acquired;
for (1 .. 2)
{
	my ($token, $acquired) = grant('batch', 'batch-1', q{'1 h'});
	$batch_acquired //= $acquired;
	is(as_app(qq{SELECT dlock.release('batch', $token)}), 't', "batch released ($_)");
}
my $batch_done = server_now();
is(as_app(q{SELECT token FROM dlock.try_acquire('report', '1 h', 'intruder')}), '',
	"busy ($_)") for 1 .. 3;

# A grant of lapsed that expires unreleased (a direct write: no test
# waits for the clock), then swept: one lapse.
my ($lapsed_token) = grant('lapsed', 'lapsed-1', q{'1 h'});
server(qq{UPDATE dlock.lease_store SET expires_at = clock_timestamp() - lock_delay - interval '1 s'
           WHERE name = 'lapsed' AND token = $lapsed_token});
is(server(q{SELECT dlock.sweep('0 s') >= 1}), 't', 'lapsed swept after its expiry');

# A session queued in acquire for report, and one waiting for the
# migrator's advisory lock.
my $waiter = start_client($app, 'waiter',
	q{SELECT token FROM dlock.acquire('report', '1 h', '10 min', owner => 'report-2')});
wait_queued($node, 'waiter', 1);
my $queued_seen = server_now();
my $deployer = start_client($app, 'deployer',
	q{SELECT dlock.advisory_lock('schema-migration')});
$node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM dlock.lock_waits
	 WHERE waiter_application = 'deployer' AND blocker_application = 'migrator'
	   AND wait_start IS NOT NULL})
  or die 'the deployer never waited for the migrator';

# When each wait and the idle transaction began, on the server's clock.
my ($idle_since, $queued_since, $deployer_since, $migration_key) = split /\|/, server(q{
	SELECT extract(epoch FROM (SELECT state_change FROM pg_stat_activity
	                            WHERE application_name = 'migrator')),
	       extract(epoch FROM (SELECT query_start FROM pg_stat_activity
	                            WHERE application_name = 'waiter')),
	       extract(epoch FROM (SELECT wait_start FROM dlock.lock_waits
	                            WHERE waiter_application = 'deployer')),
	       dlock.key('schema-migration')});

# Without pg_monitor (pg_read_all_stats) a role cannot see another role's
# session state, so the idle blocker is invisible to it.
is( $node->safe_psql('postgres',
		q{SELECT count(*) FILTER (WHERE blocker_idle_in_transaction) FROM dlock.lock_waits},
		extra_params => [ '-U', 'outsider' ]),
	'0', 'a role without pg_monitor does not see that the blocker is idle in transaction');

# ------------------------------------------------ the scrape

my $exporter = start_exporter($node, 'dlock_monitor', $queries);
my $before = server_now();
my $m = scrape($exporter);
my $after = server_now();
my $first = $m;    # every metric has a series in this one

is($m->{pg_up}, 1, 'the exporter reached the server');
is($m->{pg_exporter_last_scrape_error}, 0, 'every query ran as dlock_monitor without an error');

# The statistics' metrics, per name (dlock_stats_...) and in all (dlock_...).
my @counters = qw(grants_total busy_total waits_total wait_timeouts_total wait_seconds_total
  max_wait_seconds takeovers_total force_releases_total renew_failures_total releases_total
  hold_seconds_total max_hold_seconds lapses_total);

my $lease_waits = 'dlock_lock_waiters{key="",key_space="lease",name="report"}';
my $migration_waits = qq{dlock_lock_waiters{key="$migration_key",key_space="bigint",name="schema-migration"}};
(my $lease_longest = $lease_waits) =~ s/waiters/longest_wait_seconds/;
(my $migration_longest = $migration_waits) =~ s/waiters/longest_wait_seconds/;
is_deeply(
	[ sort grep { /^dlock_/ } keys %$m ],
	[ sort(
		'dlock_idle_in_transaction_blockers', 'dlock_idle_in_transaction_longest_idle_seconds',
		'dlock_idle_in_transaction_waiters',
		map({ ("dlock_lease_$_\{name=\"cache\"}", "dlock_lease_$_\{name=\"report\"}") }
			qw(holders held_seconds expires_in_seconds)),
		'dlock_lease_holder_token{name="report",owner="report-1"}',
		$lease_waits, $lease_longest, $migration_waits, $migration_longest,
		'dlock_statistics_enabled{status="on"}',
		(map { my $n = $_; map { "dlock_stats_$_\{name=\"$n\"}" } @counters } qw(batch cache lapsed report)),
		(map { "dlock_$_" } @counters, qw(names names_max evictions_total stats_reset_timestamp_seconds))) ],
	'the dlock series scraped: held leases, waits, the idle blocker, statistics')
  or diag join "\n", map { "$_ $m->{$_}" } sort grep { /^dlock_/ } keys %$m;

# $value lies between $low and $high (seconds; a microsecond of rounding).
sub within
{
	my ($value, $low, $high, $what) = @_;
	ok($value >= $low - 1e-6 && $value <= $high + 1e-6, $what)
	  or diag "$what: $value not in [$low, $high]";
	return;
}

is($m->{'dlock_lease_holders{name="report"}'}, 1, 'report: one holder');
is($m->{'dlock_lease_holder_token{name="report",owner="report-1"}'}, $report_token,
	'report: held by report-1, with its token; cache, shared, has no holder series');
is($m->{'dlock_lease_holders{name="cache"}'}, 2, 'cache: two readers');
within($m->{'dlock_lease_held_seconds{name="report"}'},
	$before - $report_acquired, $after - $report_acquired, 'report: held since its grant');
within($m->{'dlock_lease_held_seconds{name="cache"}'},
	$before - $reader1_acquired, $after - $reader1_acquired,
	'cache: held since the first reader\'s grant');
within($m->{'dlock_lease_expires_in_seconds{name="report"}'},
	$report_expires - $after, $report_expires - $before, 'report: expires in about an hour');
within($m->{'dlock_lease_expires_in_seconds{name="cache"}'},
	$reader2_expires - $after, $reader2_expires - $before,
	'cache: the second reader\'s grant expires first');

is($m->{$lease_waits}, 1, 'one session queued for report');
is($m->{$migration_waits}, 1, 'one session waiting for schema-migration');
within($m->{$lease_longest}, $before - $queued_since, $after - $queued_since,
	'report: waited since its acquire began');
within($m->{$migration_longest}, $before - $deployer_since, $after - $deployer_since,
	'schema-migration: waited since its lock wait began');

is($m->{dlock_idle_in_transaction_blockers}, 1, 'one blocker idle in transaction');
is($m->{dlock_idle_in_transaction_waiters}, 1,
	'one session waits for it (the queue for its lease does not count)');
within($m->{dlock_idle_in_transaction_longest_idle_seconds},
	$before - $idle_since, $after - $idle_since, 'idle since its advisory lock');

is($m->{'dlock_statistics_enabled{status="on"}'}, 1, 'statistics are on');

# The counts of $name ('' for the totals): grants, busy, waits, wait
# timeouts, takeovers, force-releases, renewal failures, releases and
# lapses.
sub counts
{
	my ($m, $name) = @_;
	my ($prefix, $labels) = $name eq '' ? ('dlock_', '') : ('dlock_stats_', '{name="' . $name . '"}');
	return join ' ', map { $m->{"$prefix$_$labels"} } grep { !/(hold|wait)_seconds/ } @counters;
}
my %counts = (
	report => '1 3 1 0 0 0 0 0 0',    # the migrator's grant, three busy, the waiter
	cache => '2 0 0 0 0 0 0 0 0',     # two readers
	batch => '2 0 0 0 0 0 0 2 0',     # granted and released twice
	lapsed => '1 0 0 0 0 0 0 0 1',    # granted, expired, swept
	'' => '6 3 1 0 0 0 0 2 1');       # in all
is(counts($m, $_), $counts{$_}, "counts of '$_'") for sort keys %counts;
is( join(' ', map { $m->{"dlock_$_"} } qw(names names_max evictions_total)),
	'4 5000 0', 'four names counted of at most 5000, none evicted');
is( join(' ', map { $m->{"dlock_stats_$_" . '{name="report"}'} } qw(wait_seconds_total max_wait_seconds)),
	'0 0', 'report: a wait is timed when it ends');
my $batch_hold = $m->{'dlock_stats_hold_seconds_total{name="batch"}'};
within($batch_hold, 1e-6, 2 * ($batch_done - $batch_acquired), 'batch: the two holds');
within($m->{'dlock_stats_max_hold_seconds{name="batch"}'}, $batch_hold / 2, $batch_hold,
	'batch: the longer hold');
is($m->{dlock_hold_seconds_total}, $batch_hold, 'in all: the same holds');
cmp_ok($m->{dlock_stats_reset_timestamp_seconds}, '==',
	server('SELECT extract(epoch FROM stats_reset) FROM dlock.stats_totals'),
	'the counters were reset when the server started');

# ------------------------------------------------ the waits end

# The migrator commits (the deployer gets the lock) and releases report
# (the waiter gets it).
$migrator->query_safe('COMMIT');
my $release_at = server_now();
is($migrator->query_safe(qq{SELECT dlock.release('report', $report_token)}), 't',
	'the migrator releases report');
my ($out) = finish_client($deployer);
is($out, "t\n", 'the deployer got schema-migration');
($out) = finish_client($waiter);
like($out, qr/^\d+\n\z/, 'the waiter got report');
my ($waiter_token) = $out =~ /^(\d+)/;
$migrator->quit;

$before = server_now();
$m = scrape($exporter);
is_deeply(
	[ sort grep { /^dlock_(lock|idle|lease_holder)/ } keys %$m ],
	[ sort('dlock_idle_in_transaction_blockers', 'dlock_idle_in_transaction_longest_idle_seconds',
		'dlock_idle_in_transaction_waiters', 'dlock_lease_holders{name="cache"}',
		'dlock_lease_holders{name="report"}',
		'dlock_lease_holder_token{name="report",owner="report-2"}') ],
	'no waits left; report\'s holder series names its new owner, the old one is gone');
is($m->{'dlock_lease_holder_token{name="report",owner="report-2"}'}, $waiter_token,
	'report: held by report-2, with the token its acquire returned');
is( join('|', map { $m->{"dlock_idle_in_transaction_$_"} } qw(blockers waiters longest_idle_seconds)),
	'0|0|0', 'no idle blocker left');
is($m->{'dlock_lease_holders{name="report"}'}, 1, 'report held by the waiter now');
is(counts($m, 'report'), '2 3 1 0 0 0 0 1 0', 'report: the waiter\'s grant, the migrator\'s release');
is(counts($m, ''), '7 3 1 0 0 0 0 3 1', 'in all: seven grants, three releases, one lapse');
my $waited = $m->{'dlock_stats_wait_seconds_total{name="report"}'};
within($waited, $release_at - $queued_seen, $before - $queued_since,
	'report: waited from its queueing until the release');
is($m->{'dlock_stats_max_wait_seconds{name="report"}'}, $waited, 'report: the one wait is the longest');

# The Prometheus page documents every metric served, and its alert rules use
# only those.
my $section = doc_text('docs/operations/prometheus.md');
my %served = map { /^(\w+)/; ($1 => 1) } grep { /^dlock_/ } keys %$first;
my %documented = map { $_ => 1 }
  map { /`(dlock_\w+)`/g } grep { /^\| `dlock_/ } split /\n/, $section;
is_deeply([ sort keys %documented ], [ sort keys %served ],
	'the Prometheus page\'s table lists exactly the metrics served');
my ($rules) = $section =~ /```yaml\n(.*?)```/s or die 'the Prometheus page has no alert rules';
my @unknown = grep { !$served{$_} } $rules =~ /\b(dlock_\w+)/g;
is("@unknown", '', 'the alert rules use only metrics served');

my $log = stop_exporter($exporter);
unlike($log, qr/level=error/, 'the exporter logged no error');
note 'the first scrape:';
note "$_ $first->{$_}" for sort grep { /^dlock_/ } keys %$first;

# ------------------------------------------------ statistics off

# Restarted without preloading dlock: nothing is counted, the statistics'
# queries return no rows, and the others go on.
$node->append_conf('postgresql.conf', "shared_preload_libraries = ''");
$node->restart;
my $status = server('SELECT dlock.stats_status()');
like($status, qr/^off: /, 'statistics are off');
$exporter = start_exporter($node, 'dlock_monitor', $queries);
$m = scrape($exporter);
is($m->{pg_exporter_last_scrape_error}, 0, 'no query failed');
is_deeply(
	[ sort grep { /^dlock_/ } keys %$m ],
	[ sort('dlock_idle_in_transaction_blockers', 'dlock_idle_in_transaction_longest_idle_seconds',
		'dlock_idle_in_transaction_waiters', 'dlock_lease_expires_in_seconds{name="cache"}',
		'dlock_lease_held_seconds{name="cache"}', 'dlock_lease_holders{name="cache"}',
		'dlock_lease_expires_in_seconds{name="report"}', 'dlock_lease_held_seconds{name="report"}',
		'dlock_lease_holders{name="report"}',
		'dlock_lease_holder_token{name="report",owner="report-2"}',
		qq{dlock_statistics_enabled{status="$status"}}) ],
	'the leases and no counters');
is($m->{qq{dlock_statistics_enabled{status="$status"}}}, 0, 'dlock_statistics_enabled is 0');
$log = stop_exporter($exporter);
unlike($log, qr/level=error/, 'the exporter logged no error');
$node->stop;
done_testing();
