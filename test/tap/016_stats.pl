# dlock.stats across the server's life: without dlock in
# shared_preload_libraries nothing is counted and everything else works;
# preloaded, counts from many concurrent sessions are exact, a full table
# of names evicts the least used while the totals keep their counts, and a
# restart starts from zero.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use PostgreSQL::Test::Utils;
use Test::More;

# Not preloaded: statistics off, said why, the views empty; leases work.
# A dlock.stats_max line left in postgresql.conf is read without a warning.
my $plain = new_node('plain', conf => "dlock.stats_max = 200\n");
create_dlock($plain);
my ($status, $stderr);
$plain->psql('postgres', 'SELECT dlock.stats_status()',
	stdout => \$status, stderr => \$stderr);
is($status, 'off: dlock is not in shared_preload_libraries',
	'not preloaded: stats_status says why nothing is counted');
is($stderr, '', 'not preloaded: a dlock.stats_max line draws no warning');
is($plain->safe_psql('postgres',
		q{SELECT token FROM dlock.try_acquire('p', '1 min', 'w')}),
	'1', 'not preloaded: leases are granted');
is($plain->safe_psql('postgres',
		'SELECT (SELECT count(*) FROM dlock.stats) || '
		  . q{'/' || (SELECT count(*) FROM dlock.stats_totals)}),
	'0/0', 'not preloaded: dlock.stats and dlock.stats_totals are empty');
is($plain->safe_psql('postgres', 'SELECT dlock.stats_reset()'),
	'', 'not preloaded: stats_reset has nothing to do');
$plain->stop;

my $node = new_node('stats',
	conf => "shared_preload_libraries = 'dlock'\ndlock.stats_max = 100\n");
create_dlock($node);
is($node->safe_psql('postgres', 'SELECT dlock.stats_status()'),
	'on', 'preloaded: statistics are on');

# Eight sessions race for four names, 250 calls each; every answer is
# logged, and the counters must equal the log exactly.
$node->safe_psql('postgres',
	'CREATE TABLE outcome (name text, token bigint, released boolean)');
$node->pgbench(
	'--no-vacuum --client=8 --jobs=4 --transactions=250',
	0,
	[qr{processed: 2000/2000}],
	[qr{^$}],
	'eight sessions cycle four leases',
	{
		'cycle' => q{
\set n random(1, 4)
INSERT INTO outcome (name, token, released)
SELECT g.name, g.token, g.token IS NOT NULL AND dlock.release(g.name, g.token)
  FROM (SELECT 'race-' || :n AS name,
               (dlock.try_acquire('race-' || :n, '1 min')).token) AS g;
}
	});
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FILTER (WHERE o.name IS NULL OR s.name IS NULL
                          OR s.grants <> o.grants OR s.busy <> o.busy
                          OR s.releases <> o.releases OR s.holders <> 0)
  FROM dlock.stats AS s
  FULL JOIN (SELECT name, count(token) AS grants, count(*) - count(token) AS busy,
                    count(*) FILTER (WHERE released) AS releases
               FROM outcome GROUP BY name) AS o USING (name)}),
	'0',
	'each name counts exactly the grants, busy answers and releases logged');
is( $node->safe_psql(
		'postgres', q{
SELECT t.grants = o.grants AND t.busy = o.busy AND t.releases = o.releases
       AND t.grants + t.busy = 2000 AND t.names = 4
  FROM dlock.stats_totals AS t,
       (SELECT count(token) AS grants, count(*) - count(token) AS busy,
               count(*) FILTER (WHERE released) AS releases FROM outcome) AS o}),
	't', 'the totals equal the log');

# A table of at most 100 entries: the database's own and one per name. One
# name much used first; then 150 names with a grant and a release each. A
# new name that finds the table full makes room by evicting the least used
# twentieth of 100 (5 names): cold-99 does, then every fifth name after it,
# 11 times in all, leaving 96 names, the much-used one among them; the
# totals still count every grant.
$node->safe_psql('postgres', q{
SELECT dlock.stats_reset();
SELECT dlock.try_acquire('hot', '1 min', 'w' || i) FROM generate_series(1, 50) AS i;
});
for my $i (1 .. 150)
{
	$node->safe_psql('postgres',
		qq{SELECT dlock.release('cold-$i', token) FROM dlock.try_acquire('cold-$i', '1 min', 'w')});
}
is( $node->safe_psql(
		'postgres',
		'SELECT names, max_names, evictions, grants, busy, releases FROM dlock.stats_totals'),
	'96|100|55|151|49|150',
	'a full table evicts the least used names; the totals keep their counts');
is( $node->safe_psql(
		'postgres', q{SELECT grants, busy, holders FROM dlock.stats WHERE name = 'hot'}),
	'1|49|1', 'the much-used name stays');
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM dlock.stats WHERE name LIKE 'cold-%'}),
	'95', 'the least used names gave way');

# Each database counts its own names: the same name in two databases is
# two names, neither database sees the other's, and a reset forgets only
# its own database's counters.
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', q{
CREATE EXTENSION dlock;
SELECT dlock.release('hot', token) FROM dlock.try_acquire('hot', '1 min', 'w');
SELECT dlock.try_acquire('only-in-other', '1 min', 'w');
});
is( $node->safe_psql(
		'other', q{SELECT string_agg(name || ':' || grants || ':' || holders, ',' ORDER BY name)
  FROM dlock.stats}),
	'hot:1:0,only-in-other:1:1',
	'another database sees only its own names');
is( $node->safe_psql(
		'other', 'SELECT grants, releases, holders, names, evictions FROM dlock.stats_totals'),
	'2|1|1|2|0', "another database's totals are its own");
is( $node->safe_psql(
		'postgres', q{SELECT grants, busy, holders FROM dlock.stats WHERE name = 'hot'}),
	'1|49|1', "a name of the same name in another database is another name");
$node->safe_psql('other', 'SELECT dlock.stats_reset()');
is( $node->safe_psql(
		'postgres',
		'SELECT names, evictions, grants FROM dlock.stats_totals'),
	'96|55|151', "a reset in another database leaves this one's counters");
is($node->safe_psql('other', 'SELECT grants, names FROM dlock.stats_totals'),
	'0|0', 'the reset forgot its own database\'s counters');

# Shared memory does not outlive the server.
my $before = $node->safe_psql('postgres', 'SELECT stats_reset FROM dlock.stats_totals');
$node->restart;
is( $node->safe_psql(
		'postgres', qq{
SELECT grants, names, evictions, holders, stats_reset > '$before'
  FROM dlock.stats_totals}),
	'0|0|0|1|t', 'a restart starts the counters from zero; held leases stay held');

# Only a grant that commits adds a name: 4,000 renewals of made-up names
# (anyone may call renew) and a rolled-back transaction of 4,000 grants
# add none and evict none. Twenty names are used ten times each first
# (five grants, five releases).
$node->safe_psql('postgres', q{
SELECT dlock.stats_reset();
SELECT count(dlock.release(n, (dlock.try_acquire(n, '1 min', 'w')).token))
  FROM generate_series(1, 20) AS i, generate_series(1, 5) AS k,
       LATERAL (SELECT 'used-' || i AS n) AS x;
});
$node->safe_psql('postgres', q{
DO $$
BEGIN
    FOR i IN 1 .. 4000 LOOP
        BEGIN
            PERFORM dlock.renew('made-up-' || i, i);
        EXCEPTION WHEN OTHERS THEN NULL;
        END;
    END LOOP;
END $$;
});
is( $node->safe_psql(
		'postgres', q{
BEGIN;
SELECT count(dlock.try_acquire('rolled-back-' || i, '1 min', 'w'))
  FROM generate_series(1, 4000) AS i;
ROLLBACK;
}),
	'4000', 'a transaction granted 4,000 new names, then rolled back');
is( $node->safe_psql(
		'postgres',
		'SELECT names, evictions, grants, releases, renew_failures, holders FROM dlock.stats_totals'),
	'20|0|100|100|0|1',
	'made-up renewals and rolled-back grants add no name and evict none');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM dlock.stats
 WHERE name LIKE 'made-up-%' OR name LIKE 'rolled-back-%'}),
	'0', 'no made-up or rolled-back name is shown');

# A burst of 4,000 new names, each granted once and committed, in a table
# of 100 entries (the database's own, 20 used names, room for 79 more):
# new names start at the median usage of the names left by the last
# eviction, so the burst evicts its own names, and the twenty used ones
# stay. Each eviction takes 5 names: 785 of them make room for the last
# 3,921 names, 3,925 names evicted in all, 95 left.
is( $node->safe_psql(
		'postgres', q{
SELECT count(dlock.try_acquire('burst-' || i, '1 min', 'w'))
  FROM generate_series(1, 4000) AS i}),
	'4000', 'a burst of 4,000 new names granted');
is( $node->safe_psql(
		'postgres', 'SELECT names, evictions, grants FROM dlock.stats_totals'),
	'95|3925|4100', 'the burst evicted 3,925 names; the totals keep every grant');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*), sum(grants), sum(releases) FROM dlock.stats WHERE name LIKE 'used-%'}),
	'20|100|100', 'every name used ten times survives the burst');

# A lease held all along (hot, granted before the restart, so uncounted
# since): a refused renewal of it adds its name, since it has a lease
# row, and a busy answer counts.
my ($renew_stdout, $renew_stderr);
$node->psql('postgres', q{SELECT dlock.renew('hot', 999999)},
	stdout => \$renew_stdout, stderr => \$renew_stderr);
like($renew_stderr, qr/ERROR/, 'a renewal of hot with a token never issued is refused');
is( $node->safe_psql(
		'postgres', q{SELECT dlock.try_acquire('hot', '1 min', 'b') IS NULL}),
	't', 'busy: hot is held');
is( $node->safe_psql(
		'postgres', q{SELECT grants, busy, renew_failures, holders FROM dlock.stats WHERE name = 'hot'}),
	'0|1|1|1', 'the refused renewal added hot, which has a lease row; the busy answer counts');

$node->stop;
done_testing();
