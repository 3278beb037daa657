# A crash of the whole server (SIGKILL to the postmaster, nothing shut down
# cleanly) loses no acknowledged grant, renewal or fenced write made with a
# grant, even from sessions running with synchronous_commit = off, and the
# tokens handed out after the restart are larger than every token handed
# out before it.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

# With a slow WAL writer, a commit that does not flush its own WAL is still
# in shared memory when the postmaster is killed.
my $node = new_node('crash', slow_wal_writer => 1);
create_dlock($node,
	fenced => { table => 'jobs', column => 'state', value => 'new', rows => 12 },
	plain => 'canary',
	checkpoint => 1);

# Three sessions that stay connected through the crash, all asynchronous.
my @sessions = map { $node->background_psql('postgres') } 1 .. 3;
for my $i (0 .. $#sessions)
{
	$sessions[$i]->query_safe(qq{SET synchronous_commit = off;
SET application_name = 'worker$i'});
}

# name => [token, owner], for every grant a session saw committed.
my %acked;
my @acked_tokens;

# Leases job-1 .. job-12, round robin over the sessions, each a grant of its
# own; jobs 1-4 also get their fenced write in the grant's transaction.
for my $id (1 .. 12)
{
	my $s = $sessions[ $id % 3 ];
	my $owner = "worker-$id";
	my $out;
	if ($id <= 4)
	{
		$out = $s->query_safe(qq{BEGIN;
SELECT token FROM dlock.try_acquire('job-$id', '1 h', '$owner') \\gset
SELECT :token;
SELECT dlock.fenced_update('jobs', :token, '{"state": "started"}', '{"id": $id}');
COMMIT});
		my ($token, $updated) = split /\n/, $out;
		is($updated, '1', "job-$id: fenced write in the grant's transaction updated one row");
		$out = $token;
	}
	else
	{
		$out = $s->query_safe(
			qq{SELECT token FROM dlock.try_acquire('job-$id', '1 h', '$owner')});
	}
	$acked{"job-$id"} = [ $out, $owner ];
	push @acked_tokens, $out;
}
is(join(',', @acked_tokens), join(',', 1 .. 12),
	'twelve grants under synchronous_commit=off got tokens 1..12 in grant order');

# Jobs 5-8: fenced writes with the session's own (off) durability. These are
# not promised to survive a crash; what survives must be one of the two
# states below.
for my $id (5 .. 8)
{
	my $s = $sessions[ $id % 3 ];
	my $token = $acked{"job-$id"}[0];
	is($s->query_safe(qq{SELECT dlock.fenced_update('jobs', $token,
	    '{"state": "async"}', '{"id": $id}')}),
		'1', "job-$id: asynchronous fenced write updated one row");
}

# Jobs 9-10: fenced writes in a session with synchronous_commit = on.
for my $id (9 .. 10)
{
	my $token = $acked{"job-$id"}[0];
	is($node->safe_psql('postgres', qq{SELECT dlock.fenced_update('jobs', $token,
	    '{"state": "synced"}', '{"id": $id}')}),
		'1', "job-$id: synchronous fenced write updated one row");
}

# Renewals under synchronous_commit = off; their new expiry must survive.
my %renewed;
for my $id (11 .. 12)
{
	my $s = $sessions[ $id % 3 ];
	my $token = $acked{"job-$id"}[0];
	my ($t, $expires) = split /\|/, $s->query_safe(qq{SELECT token, expires_at
	   FROM dlock.renew('job-$id', $token, '2 h')});
	is($t, $token, "job-$id: renew returned the same token");
	$renewed{"job-$id"} = $expires;
}

# Release job-3 (alone in its transaction, so not flushed) and hand it to a
# new owner: the takeover's grant flushes the release with it.
is($sessions[0]->query_safe(
	qq{SELECT dlock.release('job-3', $acked{'job-3'}[0])}), 't', 'job-3 released');
my $t = $sessions[1]->query_safe(
	q{SELECT token FROM dlock.try_acquire('job-3', '1 h', 'worker-3b')});
is($t, '13', 'job-3 re-granted to worker-3b with token 13');
$acked{'job-3'} = [ $t, 'worker-3b' ];
push @acked_tokens, $t;

# Last, work nobody promised to keep: an asynchronous commit that is still
# in WAL buffers when the postmaster dies.
$sessions[2]->query_safe(q{INSERT INTO canary VALUES (1)});
my $unflushed = $sessions[2]->query_safe(WAL_NOT_FLUSHED_SQL);
note "WAL bytes not flushed just before the crash: $unflushed";

# Every server process, so that the restart waits for all of them to be gone.
my $postmaster_pid =
  (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
my @children = split /\n/,
  $node->safe_psql('postgres', 'SELECT pid FROM pg_stat_activity');
cmp_ok(scalar(@children), '>=', 3 + 3,
	'the three sessions and the auxiliary processes are running');

# A process is gone once kill 0 fails. The postmaster's own lock-file check
# counts a zombie as running, so an unreaped one has to be waited out too.
sub is_zombie
{
	my ($pid) = @_;
	open my $fh, '<', "/proc/$pid/stat" or return 0;
	my $stat = <$fh>;
	close $fh;
	return defined $stat && $stat =~ /^\d+ \(.*\) Z /s;
}

# SIGKILL the postmaster, then at once every child, as a machine crash or a
# container kill would: no process gets to write out WAL still in shared
# memory.
$node->kill9;
kill 'KILL', @children;
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
my @left;
while (1)
{
	@left = grep { kill(0, $_) } ($postmaster_pid, @children);
	last if !@left || time > $deadline;
	usleep(50_000);
}
is(scalar(@left), 0, 'the postmaster and all its children are gone')
  or BAIL_OUT('server processes still there: '
	  . join(' ', map { is_zombie($_) ? "$_ (zombie)" : $_ } @left));
$_->quit for @sessions;

$node->start;

# Every acknowledged grant, with its token and owner; renewals kept.
is(lease_rows($node), held_rows(\%acked),
	'every acknowledged grant survived with its token and owner');
for my $name (sort keys %renewed)
{
	is($node->safe_psql('postgres',
		qq{SELECT expires_at FROM dlock.leases WHERE name = '$name'}),
		$renewed{$name}, "$name: the renewed expiry survived");
}
is($node->safe_psql('postgres',
	q{SELECT string_agg(id || ':' || state || ':' || fence_token, ',' ORDER BY id)
	    FROM jobs WHERE id IN (1, 2, 3, 4, 9, 10)}),
	'1:started:1,2:started:2,3:started:3,4:started:4,9:synced:9,10:synced:10',
	'fenced writes made with a grant or synchronously survived');
my $async_bad = $node->safe_psql('postgres', q{SELECT count(*) FROM jobs
	WHERE id BETWEEN 5 AND 8
	  AND NOT ((state = 'new' AND fence_token = 0)
	        OR (state = 'async' AND fence_token = id))});
is($async_bad, '0', 'asynchronous fenced writes are either lost whole or kept whole');
note 'canary rows after the crash: ' . $node->safe_psql('postgres',
	q{SELECT count(*) FROM canary});

# A crash keeps the server on its history: no epoch jump.
my $max_acked = (sort { $b <=> $a } @acked_tokens)[0];
is($max_acked, 13, 'the largest acknowledged token is 13');

# New grants from several sessions, synchronous_commit off again.
my @new;
for my $id (13 .. 18)
{
	push @new, grant_token($node, "job-$id", 'after-crash',
		before => 'SET synchronous_commit = off;');
}
my @not_greater = grep { $_ <= $max_acked } @new;
is(scalar(@not_greater), 0,
	'every token granted after the crash is greater than every acknowledged one')
  or diag "new tokens: @new";
is(join(',', @new), join(',', sort { $a <=> $b } @new), 'new tokens keep growing');
is($new[0] >> 40, 0, 'a crash is not a new history: tokens stay in epoch 0');

# The holders' state carried over: the same owner's retry gets its token
# back, another owner gets nothing, and the fences hold against old tokens.
is(grant_token($node, 'job-5', 'worker-5'),
	$acked{'job-5'}[0], "job-5: the holder's retry returns its token");
is(grant_token($node, 'job-5', 'intruder'),
	'', 'job-5: still held, another owner is refused');
my $newest = $new[-1];
is($node->safe_psql('postgres', qq{SELECT dlock.fenced_update('jobs', $newest,
	'{"state": "redone"}', '{"id": 1}')}), '1',
	'a fenced write with a new token passes');
is(sqlstate_of($node, 'postgres',
	q{SELECT dlock.fenced_update('jobs', 12, '{"state": "late"}', '{"id": 1}')}),
	'LD001', 'an old token after the new one is refused (LD001)');
is($node->safe_psql('postgres', 'SELECT state || fence_token FROM jobs WHERE id = 1'),
	"redone$newest", 'the row keeps the newer write');

$node->stop;
done_testing();
