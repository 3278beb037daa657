# How dlock.acquire waits, where only real processes can show it:
#  - a waiter whose client has gone is never granted the lease: at the
#    head of the queue it notices the closed connection at once and ends
#    its session; further back it does so when it reaches the head;
#  - timeouts are measured on the monotonic clock: a wall clock stepped
#    back an hour does not stretch a 3 s timeout, and one stepped forward
#    does not end a 4 s timeout at once (the server runs under libfaketime,
#    which moves only the wall clock).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

sub session_gone
{
	my ($node, $app) = @_;
	return $node->poll_query_until('postgres',
		qq{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = '$app'});
}

# ------------------------------------------------ a client that has gone

my $node = new_node('gone');
create_dlock($node);

# At the head: the session ends as soon as its client does, and the
# lease, released later, is nobody's.
my $holder = grant_token($node, 'job', 'holder');
my $b = start_client($node->connstr('postgres'), 'b', q{SELECT token FROM dlock.acquire('job', '1 h', '1 h', 'b')});
wait_queued($node, 'b', 1);
$b->{h}->kill_kill;
ok(session_gone($node, 'b'), 'head of the queue: its session ends when its client goes');
is($node->safe_psql('postgres', "SELECT dlock.release('job', $holder)"), 't', 'the holder releases');
is($node->safe_psql('postgres', q{SELECT count(*) FROM dlock.lease_store WHERE owner = 'b'}),
	'0', 'the gone client was never granted the lease');
ok($node->log_contains('connection to client lost'), 'the server says why the session ended');

# Behind a live head: the dead waiter stays queued without blocking the
# head, and when it reaches the head it ends instead of taking the lease.
$holder = grant_token($node, 'job2', 'holder');
my $c = start_client($node->connstr('postgres'), 'c', q{SELECT token FROM dlock.acquire('job2', '1 h', '1 h', 'c')});
wait_queued($node, 'c', 1);
my $d = start_client($node->connstr('postgres'), 'd', q{SELECT token FROM dlock.acquire('job2', '1 h', '1 h', 'd')});
wait_queued($node, 'd', 0);
$d->{h}->kill_kill;
$node->safe_psql('postgres', "SELECT dlock.release('job2', $holder)");
my ($c_out) = finish_client($c);
like($c_out, qr/^\d+$/, 'the live head is served');
$node->safe_psql('postgres', "SELECT dlock.release('job2', $c_out)");
ok(session_gone($node, 'd'), 'the dead waiter ends when it reaches the head');
is($node->safe_psql('postgres', q{SELECT owner || ' ' || state FROM dlock.leases WHERE name = 'job2'}),
	'c released', 'and the lease stays free');
$node->stop;

# ------------------------------------------------ wall-clock steps

my $clock = new_faketime_node('clock');
# Held for most of a day: a step of an hour either way leaves it held.
$clock->safe_psql('postgres', q{SELECT dlock.try_acquire('tick', '23 h', 'holder')});

# Back an hour while the head waits with a 3 s timeout.
my $w = start_client($clock->connstr('postgres'), 'w', q{SELECT token FROM dlock.acquire('tick', '1 h', '3 s', 'w')});
wait_queued($clock, 'w', 1);
set_clock_offset($clock, '-3600');
my ($out, $took) = finish_client($w);
like($out, qr/could not acquire lease "tick" within the timeout/, 'stepped back: the head times out');
cmp_ok($took, '<', 60, 'after its 3 s, not the hour the wall clock went back');

# Forward an hour while the head waits 4 s, and a waiter behind it 5 s.
set_clock_offset($clock, '+0');
$w = start_client($clock->connstr('postgres'), 'w', q{SELECT token FROM dlock.acquire('tick', '1 h', '4 s', 'w')});
wait_queued($clock, 'w', 1);
my $x = start_client($clock->connstr('postgres'), 'x', q{SELECT token FROM dlock.acquire('tick', '1 h', '5 s', 'x')});
wait_queued($clock, 'x', 0);
set_clock_offset($clock, '+3600');
($out, $took) = finish_client($w);
like($out, qr/could not acquire lease "tick" within the timeout/, 'stepped forward: the head times out');
cmp_ok($took, '>=', 3.9, 'but only after its 4 s');
($out, $took) = finish_client($x);
like($out, qr/could not acquire lease "tick" within the timeout/, 'the waiter behind it times out');
cmp_ok($took, '>=', 4.9, 'after its 5 s too');
$clock->stop;

done_testing();
