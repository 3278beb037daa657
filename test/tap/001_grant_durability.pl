# Grants and renewals are flushed to WAL at commit even in a session with
# synchronous_commit = off, so a token once returned is never handed out
# again after a crash; a release that is its transaction's only write is
# not flushed (losing it only means the lease expires by its TTL), but one
# that shares its transaction with other writes leaves them durable.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('primary');
$node->init;
# A slow WAL writer and no background writes, so that an unflushed commit
# stays unflushed long enough to be seen (and lost in a crash).
$node->append_conf('postgresql.conf', qq{
wal_writer_delay = 10s
wal_writer_flush_after = 0
autovacuum = off
checkpoint_timeout = 1h
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION dlock');

# Bytes of WAL inserted but not yet flushed, measured right after the
# statements in $sql commit (in the same session).
sub unflushed_after
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', qq{
SET synchronous_commit = off;
$sql;
SELECT pg_current_wal_insert_lsn() - pg_current_wal_flush_lsn();
});
}

my @lines;
@lines = split /\n/, unflushed_after(
	q{SELECT (dlock.try_acquire('a', '1 h', 'crash-test')).token});
is($lines[-1], '0', 'try_acquire under synchronous_commit=off is flushed at commit');

@lines = split /\n/, unflushed_after(q{SELECT (dlock.renew('a', 1)).token});
is($lines[0], '1', 'renew returns the same token');
is($lines[-1], '0', 'renew under synchronous_commit=off is flushed at commit');

@lines = split /\n/, unflushed_after(
	q{SELECT (dlock.acquire('b', '1 h', '1 s', 'crash-test')).token});
is($lines[0], '2', 'acquire grants token 2');
is($lines[-1], '0', 'acquire under synchronous_commit=off is flushed at commit');

# A release alone: the commit does not wait for the flush, whatever the
# session's synchronous_commit says.
$node->safe_psql('postgres', q{SELECT dlock.try_acquire('c', '1 h', 'crash-test')});
my $unflushed = $node->safe_psql('postgres', q{
SELECT dlock.release('c', 3);
SELECT pg_current_wal_insert_lsn() - pg_current_wal_flush_lsn();
});
my ($released, $gap) = split /\n/, $unflushed;
is($released, 't', 'release of c returned true');
cmp_ok($gap, '>', 0, 'a release that is the only write is not flushed at commit');

# A release sharing its transaction with another write: durable as usual.
$node->safe_psql('postgres', q{
CREATE TABLE work_done (token bigint);
SELECT dlock.try_acquire('d', '1 h', 'crash-test');
});
$unflushed = $node->safe_psql('postgres', q{
BEGIN;
INSERT INTO work_done VALUES (4);
SELECT dlock.release('d', 4);
COMMIT;
SELECT pg_current_wal_insert_lsn() - pg_current_wal_flush_lsn();
});
($released, $gap) = split /\n/, $unflushed;
is($released, 't', 'release of d returned true');
is($gap, '0', 'a release sharing its transaction with other writes is flushed');

# Crash without a checkpoint: everything acknowledged above as flushed
# survives, and new tokens continue above every token handed out.
$node->stop('immediate');
$node->start;

is($node->safe_psql('postgres',
	q{SELECT string_agg(name || '=' || token || ':' || state, ',' ORDER BY name)
	    FROM dlock.leases WHERE name IN ('a', 'b', 'd')}),
	'a=1:held,b=2:held,d=4:released',
	'grants made under synchronous_commit=off survived the crash');
is($node->safe_psql('postgres', 'SELECT count(*) FROM work_done'), '1',
	'the write that shared a transaction with a release survived');
cmp_ok($node->safe_psql('postgres',
	q{SELECT (dlock.try_acquire('e', '1 h', 'after-crash')).token}),
	'>', 4, 'the first token after the crash is larger than every earlier one');

$node->stop;
done_testing();
