# What works behind PgBouncer in transaction mode with fewer server
# connections (two) than clients, where a client's next transaction may
# run in another server backend:
#  - a lease taken with an explicit owner is renewed and released from
#    other backends than the one that granted it;
#  - transaction-level advisory locks work; a session-level one stays with
#    the backend that took it, which its client's unlock never reaches;
#  - a waiting acquire keeps a server connection, so with the pool full
#    the holder's renew waits in PgBouncer until the lease has expired and
#    a waiter has taken it over.
# Each client pins a backend by holding a transaction open in it, which
# makes PgBouncer's choice of backend for the others certain.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node('pooler');
create_dlock($node);
my $bouncer = start_pgbouncer($node, pool_size => 2);
my ($c1, $c2, $c3) = map {    # clients 1, 2 and 3
	$node->background_psql('postgres', extra_params => [ '-d', $bouncer->{connstr} ])
} 1 .. 3;

# What the server itself says, read past PgBouncer.
sub server { return $node->safe_psql('postgres', $_[0]) }

# $sql run by $client, with what it printed on stderr (a WARNING).
sub query_with_warnings
{
	my ($client, $sql) = @_;
	my $out = $client->query($sql);
	my $err = $client->{stderr};
	$client->{stderr} = '';    # query_safe fails on anything left there
	return ($out, $err);
}

# ------------------------------------------------ a lease across backends

my $p1 = $c1->query_safe('BEGIN; SELECT pg_backend_pid()');
my ($p2, $token, $acquired_at) = split /\|/, $c3->query_safe(
	q{SELECT pg_backend_pid(), token, acquired_at FROM dlock.try_acquire('job', '1 min', 'worker-1')});
isnt($p2, $p1, 'lease: granted in the backend that client 1 is not pinning');
is($token, '1', 'the first token');
is($c2->query_safe('BEGIN; SELECT pg_backend_pid()'), $p2, 'client 2 pins the granting backend');
$c1->query_safe('COMMIT');

is( $c3->query_safe(qq{
		SELECT pg_backend_pid(), token, owner, acquired_at = '$acquired_at',
		       valid_for > '1 min' AND valid_for <= '2 min'
		  FROM dlock.renew('job', $token, '2 min', 'worker-1')}),
	"$p1|1|worker-1|t|t",
	'renewed from the other backend: same token, owner and grant, 2 min left');
is(server(q{SELECT token, owner, state, expires_at - acquired_at > '1 min' FROM dlock.leases}),
	'1|worker-1|held|t', 'the server has the renewal');
is($c3->query_safe(qq{SELECT pg_backend_pid(), dlock.release('job', $token, 'worker-1')}),
	"$p1|t", 'released from the other backend');
is(server(q{SELECT token, owner, state FROM dlock.leases}),
	'1|worker-1|released', 'the server has the lease released');
$c2->query_safe('COMMIT');

# ------------------------------------------------ advisory locks

# Transaction-level: held for client 1's transaction, wherever it runs.
$p1 = $c1->query_safe('BEGIN; SELECT pg_backend_pid()');
is($c1->query_safe(q{SELECT dlock.advisory_lock('migrate', xact => true)}),
	't', 'xact advisory lock taken in a transaction');
($p2, my $got) = split /\|/, $c2->query_safe(
	q{SELECT pg_backend_pid(), dlock.advisory_lock('migrate', '0 s', xact => true)});
isnt($p2, $p1, 'client 2 runs in the other backend');
is($got, 'f', 'which cannot take it meanwhile');
is( server(q{SELECT pid, mode, granted FROM dlock.advisory_locks WHERE key = dlock.key('migrate')}),
	"$p1|exclusive|t", 'the server shows it held by client 1\'s backend');
$c1->query_safe('COMMIT');
is(server(q{SELECT count(*) FROM dlock.advisory_locks WHERE key = dlock.key('migrate')}),
	'0', 'COMMIT frees it');
is($c2->query_safe(q{SELECT dlock.advisory_lock('migrate', '0 s', xact => true)}),
	't', 'and another client takes it');

# Session-level: client 3's lock stays with the backend that took it.
$p1 = $c1->query_safe('BEGIN; SELECT pg_backend_pid()');
($p2, $got) = split /\|/,
  $c3->query_safe(q{SELECT pg_backend_pid(), dlock.advisory_lock('report', '0 s')});
isnt($p2, $p1, 'session advisory lock: taken in the backend that client 1 is not pinning');
is($got, 't', 'client 3 takes it');
is($c2->query_safe('BEGIN; SELECT pg_backend_pid()'), $p2, 'client 2 pins that backend');
$c1->query_safe('COMMIT');
my ($unlock, $warning) =
  query_with_warnings($c3, q{SELECT pg_backend_pid(), dlock.advisory_unlock('report')});
is($unlock, "$p1|f", 'client 3\'s unlock runs in the other backend and returns false');
like($warning, qr/WARNING:  you don't own a lock of type ExclusiveLock/,
	'with PostgreSQL\'s warning');
is($c1->query_safe(q{SELECT pg_backend_pid(), dlock.advisory_lock('report', '0 s')}),
	"$p1|f", 'another client cannot take it');
$c2->query_safe('COMMIT');
is( server(q{SELECT pid, granted FROM dlock.advisory_locks WHERE key = dlock.key('report')}),
	"$p2|t", 'with every client idle, the first backend still holds it: a leak');
is(server(qq{SELECT pg_terminate_backend($p2)}), 't', 'ending that backend');
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM dlock.advisory_locks WHERE key = dlock.key('report')}),
	'is what frees it');
ok(poll_until(sub { !grep { $_->{remote_pid} == $p2 } pgbouncer_show($bouncer, 'SERVERS') }),
	'and PgBouncer drops its connection to it');
$_->quit for $c1, $c2, $c3;

# ------------------------------------------------ a waiting acquire

# The holder takes its lease for an hour. It is cut to 2 s (by a renew sent
# past PgBouncer, standing for the holder's last renew that got through)
# only once both waiters hold the pool's server connections and the
# holder's next renew waits in PgBouncer: nothing depends on how fast they
# get there.
my $holder_token = $node->safe_psql('postgres',
	q{SELECT token FROM dlock.try_acquire('nightly', '1 h', 'holder')},
	extra_params => [ '-d', $bouncer->{connstr} ]);
is($holder_token, '2', 'the holder takes the lease through PgBouncer');
my $acquire = q{SELECT token FROM dlock.acquire('nightly', '1 min', timeout => '30 s', owner => '%s')};
my $w1 = start_client($bouncer->{connstr}, 'w1', sprintf($acquire, 'w1'));
wait_queued($node, 'w1', 1);
my $w2 = start_client($bouncer->{connstr}, 'w2', sprintf($acquire, 'w2'));
wait_queued($node, 'w2', 0);

# The pool row of database postgres.
sub pool { return (grep { $_->{database} eq 'postgres' } pgbouncer_show($bouncer, 'POOLS'))[0] }
is_deeply([ @{ pool() }{qw(sv_active sv_idle cl_waiting)} ],
	[ 2, 0, 0 ], 'the two waiters hold both server connections');
my $renew = start_client($bouncer->{connstr}, 'holder',
	qq{SELECT token FROM dlock.renew('nightly', $holder_token, '1 h', 'holder')});
ok(poll_until(sub { pool()->{cl_waiting} == 1 }), 'the holder\'s renew waits in PgBouncer');
is( join(',', sort map { "$_->{application_name}:$_->{state}" }
		  grep { $_->{database} eq 'postgres' } pgbouncer_show($bouncer, 'CLIENTS')),
	'holder:waiting,w1:active,w2:active',
	'the waiting client is the holder');
is(server(qq{SELECT valid_for <= '2 s' FROM dlock.renew('nightly', $holder_token, '2 s', 'holder')}),
	't', 'the lease has 2 s left');

my ($w1_out) = finish_client($w1);
is($w1_out, "3\n", 'once it has expired, the head takes it over, with a larger token');
my ($renew_out) = finish_client($renew);
like( $renew_out,
	qr/^ERROR:  LD002: lease "nightly" is not held with token 2\nDETAIL:  The lease was taken by a newer token; its latest token is 3\.\n/,
	'then the holder\'s renew runs, and fails with LD002');
is(server(q{SELECT token, owner, state FROM dlock.leases WHERE name = 'nightly'}),
	'3|w1|held', 'the server has the lease with the head');

is($node->safe_psql('postgres', q{SELECT dlock.release('nightly', 3, 'w1')},
		extra_params => [ '-d', $bouncer->{connstr} ]),
	't', 'the head releases through PgBouncer');
my ($w2_out) = finish_client($w2);
is($w2_out, "4\n", 'and the waiter behind it gets the lease, with a larger token still');
is(server(q{SELECT token, owner, state FROM dlock.leases WHERE name = 'nightly'}),
	'4|w2|held', 'as the server has it');

stop_pgbouncer($bouncer);
$node->stop;
done_testing();
