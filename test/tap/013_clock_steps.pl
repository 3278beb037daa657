# Leases when the server's wall clock steps, as an administrator or NTP may
# step it. dlock judges every lease by the server's wall clock
# (clock_timestamp()), the one clock its stored expiry shares with every
# session, restart and standby; so:
#  - a step forward expires every lease whose expiry it passes, at once:
#    its holder's renew fails (LD002), another owner is granted the name
#    with a larger token, and the old holder's late writes are refused;
#  - a step back lengthens every lease by the step: the holder keeps it,
#    others find it busy, and a lease that had expired and that nobody took
#    since is held again by its holder, with its token; a renewal then
#    counts its TTL from the stepped clock;
#  - `dlock run` loses its lease at a step forward that passes its expiry:
#    its keeper's next renewal is refused, and COMMAND is stopped;
#  - the head of acquire's queue, sleeping toward the holder's expiry,
#    notices a step forward within a second;
#  - tokens only grow, whatever the clock does (they come from a sequence);
#  - waits and timeouts run on the monotonic clock (006_acquire_waits.pl).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use DlockRun;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_faketime_node('steps');
$node->safe_psql('postgres', q{
CREATE TABLE jobs (id int PRIMARY KEY, status text, fence_token bigint NOT NULL DEFAULT 0);
INSERT INTO jobs VALUES (1, 'new', 0), (2, 'new', 0);
});

# Every token granted, in the order granted: they must only grow.
my @tokens;
sub grant
{
	my ($name, $ttl, $owner) = @_;
	my $token = $node->safe_psql('postgres',
		qq{SELECT token FROM dlock.try_acquire('$name', '$ttl', '$owner')});
	push @tokens, $token if $token ne '';
	return $token;
}
sub state_of
{
	my ($name, $token) = @_;
	return $node->safe_psql('postgres',
		qq{SELECT state FROM dlock.leases WHERE name = '$name' AND token = $token});
}
# Seconds of validity the lease has left, as dlock.leases says.
sub valid_for
{
	my ($name) = @_;
	return $node->safe_psql('postgres',
		qq{SELECT coalesce(extract(epoch FROM valid_for)::int, -1)
		     FROM dlock.leases WHERE name = '$name' AND state = 'held'});
}
sub fenced_write
{
	my ($id, $token, $status) = @_;
	return sqlstate_of($node, 'postgres',
		qq{SELECT dlock.fenced_update('jobs', $token, '{"status": "$status"}', '{"id": $id}')});
}

# ------------------------------------------------ forward an hour

my $ta = grant('report', '60 s', 'a');
is(state_of('report', $ta), 'held', 'a holds report for 60 s');
is(fenced_write(1, $ta, 'a-1'), '', 'a writes job 1 with its token');

set_clock_offset($node, '+3600');
is(state_of('report', $ta), 'expired', 'an hour forward: a\'s lease has expired');
is(sqlstate_of($node, 'postgres', qq{SELECT dlock.renew('report', $ta, owner => 'a')}),
	'LD002', 'a\'s renewal is refused: the lease is not held');
is(sqlstate_of($node, 'postgres', qq{SELECT dlock.assert_held('report', $ta)}),
	'LD002', 'and so is assert_held');
my $tb = grant('report', '60 s', 'b');
cmp_ok($tb, '>', $ta, 'b is granted report, with a larger token');
is(fenced_write(1, $tb, 'b-1'), '', 'b writes job 1');
is(fenced_write(1, $ta, 'a-2'), 'LD001', 'a\'s late write is refused as stale');
is($node->safe_psql('postgres', q{SELECT status || ' ' || fence_token FROM jobs WHERE id = 1}),
	"b-1 $tb", 'job 1 holds b\'s write');
is($node->safe_psql('postgres', qq{SELECT dlock.release('report', $ta, owner => 'a')}),
	'f', 'a\'s release finds nothing of its own to release');

# An hour back to the real time: b's lease, granted at +1 h, is now
# valid for an hour and a minute; a's is not revived (b's grant ended it).
set_clock_offset($node, '+0');
cmp_ok(valid_for('report'), '>', 3600, 'back an hour: b\'s 60 s lease is valid for over an hour');
is($node->safe_psql('postgres', q{SELECT owner || ' ' || state FROM dlock.leases WHERE name = 'report'}),
	'b held', 'a\'s grant, taken over, is gone: b holds report');
is(grant('report', '60 s', 'c'), '', 'c finds report busy');
is($node->safe_psql('postgres', qq{SELECT extract(epoch FROM valid_for)::int <= 60
                                     FROM dlock.renew('report', $tb, '60 s', owner => 'b')}),
	't', 'b\'s renewal counts its 60 s from the stepped clock');
is($node->safe_psql('postgres', qq{SELECT dlock.release('report', $tb, owner => 'b')}),
	't', 'b releases it');

# ------------------------------------------------ back an hour

my $d = grant('backup', '60 s', 'd');
set_clock_offset($node, '-3600');
cmp_ok(valid_for('backup'), '>', 3600, 'an hour back: d\'s 60 s lease is valid for over an hour');
is(grant('backup', '60 s', 'e'), '', 'e finds backup busy');
is(fenced_write(2, $d, 'd-1'), '', 'd writes job 2');
my $renewed = $node->safe_psql('postgres',
	qq{SELECT token, extract(epoch FROM valid_for)::int <= 60 FROM dlock.renew('backup', $d, owner => 'd')});
is($renewed, "$d|t", 'd renews it, with its token, for 60 s from the stepped clock');
set_clock_offset($node, '+0');
is(state_of('backup', $d), 'expired', 'forward to the real time: d\'s renewed lease has expired');
my $e = grant('backup', '60 s', 'e');
cmp_ok($e, '>', $d, 'e is granted backup, with a larger token');
is(fenced_write(2, $d, 'd-2'), 'LD001', 'once e writes, d\'s late write is refused')
  if fenced_write(2, $e, 'e-1') eq '';

# ------------------------------------------------ a waiter, forward

# The head of acquire's queue sleeps toward the holder's expiry on the
# monotonic clock, but looks at the wall clock again every second: a step
# forward that expires the hour-long grant hands the lease to the waiter
# then, well within its 30 s timeout, not an hour later.
my $holder = grant('queue', '1 h', 'holder');
my $waiter = start_client($node->connstr('postgres'), 'waiter',
	q{SELECT token FROM dlock.acquire('queue', '60 s', '30 s', 'waiter')});
wait_queued($node, 'waiter', 1);
set_clock_offset($node, '+3600');
my ($out) = finish_client($waiter);
cmp_ok($out, '>', $holder, 'an hour forward: the queued waiter is granted the hour-long lease');
push @tokens, $out;
is(state_of('queue', $out), 'held', 'and holds it');
set_clock_offset($node, '+0');

# ------------------------------------------------ expired, then back

# A lease that expired at a forward step, and that nobody took since, is
# held again when the clock steps back: it is judged by its stored
# expiry, and nothing else was granted the name in between.
my $f = grant('sync', '60 s', 'f');
set_clock_offset($node, '+3600');
is(state_of('sync', $f), 'expired', 'an hour forward: f\'s lease has expired');
set_clock_offset($node, '+0');
is(state_of('sync', $f), 'held', 'back again: f holds it again');
is($node->safe_psql('postgres', qq{SELECT token FROM dlock.renew('sync', $f, owner => 'f')}),
	$f, 'f renews it, with its token');
is(grant('sync', '60 s', 'g'), '', 'g finds it busy');

# ------------------------------------------------ dlock run

my $r = start_run(name => 'deploy', options => [ '--ttl', '6s', '--kill-after', '1s' ],
	script => TRAP_TERM . q{
record_env; linger},
	env => { PGHOST => $node->host, PGPORT => $node->port, PGDATABASE => 'postgres' });
my $env = read_env($r);
push @tokens, $env->{token};
my $renewed_once = poll_until(sub {
	$node->safe_psql('postgres', q{SELECT renew_count > 0 FROM dlock.leases WHERE name = 'deploy'}) eq 't';
});
ok($renewed_once, 'dlock run holds deploy and renews it');
set_clock_offset($node, '+3600');
wait_marker($r, 'term');
is(run_exit_code($r), 76, 'an hour forward: dlock run loses the lease, stops COMMAND and exits 76');
is(run_stderr($r),
	"dlock: lease deploy lost: renewal refused: lease \"deploy\" is not held with token $env->{token}"
	  . " (The lease expired; its latest token is $env->{token}.)\n",
	'its renewal was refused: the lease had expired');
set_clock_offset($node, '+0');

# ------------------------------------------------ tokens

my @sorted = sort { $a <=> $b } @tokens;
is_deeply(\@tokens, \@sorted, 'every token granted was larger than the one before');
is(scalar(@tokens), 8, 'eight grants were made');
my $last = $node->safe_psql('postgres', q{SELECT max(token) FROM dlock.leases});
set_clock_offset($node, '-3600');
my $h = grant('later', '60 s', 'h');
cmp_ok($h, '>', $last, 'a grant after a step back still gets a larger token');

$node->stop;
done_testing();
