# Grants and renewals are flushed to WAL at commit even in a session with
# synchronous_commit = off, so a token once returned is never handed out
# again after a crash; a release that is its transaction's only write is
# not flushed (losing it only means the lease expires by its TTL), but one
# that shares its transaction with other writes leaves them durable.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use Test::More;

# Streaming allowed, so that synchronous_standby_names is honoured.
my $node = new_node('primary', slow_wal_writer => 1,
	init => { allows_streaming => 1 });
create_dlock($node, plain => 'work_done');

# unflushed_after(), in a session with synchronous_commit = off.
sub unflushed_after_async
{
	my ($sql) = @_;
	return unflushed_after($node, "SET synchronous_commit = off;\n$sql");
}

my @lines;
@lines = unflushed_after_async(
	q{SELECT (dlock.try_acquire('a', '1 h', 'crash-test')).token});
is($lines[-1], '0', 'try_acquire under synchronous_commit=off is flushed at commit');

@lines = unflushed_after_async(q{SELECT (dlock.renew('a', 1)).token});
is($lines[0], '1', 'renew returns the same token');
is($lines[-1], '0', 'renew under synchronous_commit=off is flushed at commit');

@lines = unflushed_after_async(
	q{SELECT (dlock.acquire('b', '1 h', '1 s', 'crash-test')).token});
is($lines[0], '2', 'acquire grants token 2');
is($lines[-1], '0', 'acquire under synchronous_commit=off is flushed at commit');

# A release alone: the commit does not wait for the flush, whatever the
# session's synchronous_commit says.
grant_token($node, 'c', 'crash-test');
my ($released, $gap) = unflushed_after($node, q{SELECT dlock.release('c', 3)});
is($released, 't', 'release of c returned true');
cmp_ok($gap, '>', 0, 'a release that is the only write is not flushed at commit');

# A release sharing its transaction with another write: durable as usual.
grant_token($node, 'd', 'crash-test');
($released, $gap) = unflushed_after($node, q{
BEGIN;
INSERT INTO work_done VALUES (4);
SELECT dlock.release('d', 4);
COMMIT});
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
cmp_ok(grant_token($node, 'e', 'after-crash'),
	'>', 4, 'the first token after the crash is larger than every earlier one');

# Neither the database, the role nor the connection can lower a grant
# below synchronous_commit = on: with a synchronous standby that never
# connects, a grant by a role set to 'local' waits for it, while the same
# role's plain writes do not.
$node->safe_psql('postgres', q{
CREATE ROLE local_committer LOGIN;
ALTER ROLE local_committer SET synchronous_commit = local;
GRANT ALL ON work_done TO local_committer;
ALTER SYSTEM SET synchronous_standby_names = 'nobody';
SELECT pg_reload_conf();});
my @as_role = (extra_params => [ '-U', 'local_committer' ]);
is($node->safe_psql('postgres', 'INSERT INTO work_done VALUES (6) RETURNING 1', @as_role),
	'1', 'a plain write by the role returns without the synchronous standby');
my $grant = $node->background_psql('postgres', @as_role);
$grant->query_until(qr/sent/,
	"\\echo sent\nSELECT dlock.try_acquire('sync', '1 h', 'local-committer');\n");
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE usename = 'local_committer' AND wait_event = 'SyncRep'}),
	'a grant by the same role waits for the synchronous standby');
$node->safe_psql('postgres', q{
SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = 'local_committer';
ALTER SYSTEM RESET synchronous_standby_names;
SELECT pg_reload_conf();});
$grant->quit;

$node->stop;
done_testing();
