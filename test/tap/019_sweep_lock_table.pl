# dlock.sweep on a small server (max_connections = 20, the lock settings
# at their defaults): each name swept holds its gate, a lock in the shared
# lock table, until commit, so one call takes at most a tenth of that
# table (64 × 20 / 10 = 128 names), and calls repeated until 0 remove
# every old row, in two databases at once. Before, one call took up to
# 10,000 names and failed with 53200 "out of shared memory" from 5,000 on.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node('sweep', conf => "max_connections = 20\n");
is($node->safe_psql('postgres',
		q{SELECT current_setting('max_locks_per_transaction') || '/' ||
		         current_setting('max_prepared_transactions')}),
	'64/0', 'the lock settings are at their defaults');
$node->safe_psql('postgres', 'CREATE DATABASE other');
my $rows = 6000;
for my $db ('postgres', 'other')
{
	create_dlock($node, db => $db);
	# $rows released leases, 200 names a transaction (each grant and
	# release takes its name's gate until commit too), and 3 held ones.
	my $sql = '';
	for (my $first = 1; $first <= $rows; $first += 200)
	{
		my $last = $first + 199;
		$sql .= qq{SELECT count(dlock.release(l.name, l.token, 'w'))
  FROM generate_series($first, $last) AS g,
       dlock.try_acquire('old-' || g, '1 h', 'w') AS l;
};
	}
	$sql .= qq{SELECT dlock.try_acquire('held-' || g, '1 h', 'w')
  FROM generate_series(1, 3) AS g;
};
	$node->safe_psql($db, $sql);
	is($node->safe_psql($db, 'SELECT count(*) FROM dlock.lease_store'),
		$rows + 3, "$db: $rows released leases and 3 held");
}

# A sweep of database other, its transaction left open: it holds its
# names' gates meanwhile.
my $other = $node->background_psql('other');
$other->query_safe('BEGIN');
is($other->query_safe(q{SELECT dlock.sweep('0 s')}),
	'128', 'other: the first call sweeps 128 names (a tenth of the lock table)');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_locks AS l JOIN pg_stat_activity AS a USING (pid)
	 WHERE a.datname = 'other' AND l.locktype = 'advisory' AND l.granted}),
	'128', 'other: its open transaction holds 128 gates');

# Meanwhile, database postgres is swept to the end: call after call of at
# most 128 rows, until 0.
my @calls;
for (1 .. 100)
{
	my ($out, $err) = ('', '');
	$node->psql('postgres', q{SELECT dlock.sweep('0 s')},
		stdout => \$out, stderr => \$err);
	if ($err ne '')
	{
		push @calls, "error: $err";
		last;
	}
	push @calls, $out;
	last if $out eq '0';
}
my $expected = join(',', (128) x int($rows / 128), $rows % 128, 0);
is(join(',', @calls), $expected,
	'postgres: each call sweeps 128 rows until the last, then 0');
is($node->safe_psql('postgres',
		q{SELECT string_agg(name, ',' ORDER BY name) FROM dlock.lease_store}),
	'held-1,held-2,held-3', 'postgres: only the held leases are left');

$other->query_safe('COMMIT');
my $swept = 128;
for (1 .. 100)
{
	my $n = $node->safe_psql('other', q{SELECT dlock.sweep('0 s')});
	$swept += $n;
	last if $n == 0;
}
is($swept, $rows, "other: $rows rows swept in all");
is($node->safe_psql('other',
		q{SELECT string_agg(name, ',' ORDER BY name) FROM dlock.lease_store}),
	'held-1,held-2,held-3', 'other: only the held leases are left');
$other->quit;

# New connections still work, and leases are granted.
is(grant_token($node, 'after', 'w'), '6004',
	'a new connection is granted a lease after the sweeps');

$node->stop;
done_testing();
