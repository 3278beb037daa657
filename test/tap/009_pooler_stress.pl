# Leases under load through PgBouncer in transaction mode: 32 clients share
# a pool of 4 server connections for 20 s, each cycling a lease of one of
# 4 names (acquire by polling, a fenced write of that name's row, a renew,
# a release), every call its own transaction on whichever backend is free.
# dlock_pooler_stress (test/stress/pooler_stress.cpp, built by CMake
# and copied next to this file) logs every call in the failure runs'
# history format and has the history checker (test/history/) judge it: no
# two holds of a name overlap on the server's clock, tokens increase in
# grant order, every call (fenced writes and releases among them) is
# answered ok, each grant has its write, renewal and release, the rows end
# as the last accepted writes. Here: it passes, and the clients ran on no
# more than the pool's 4 server backends. A run that fails keeps its
# history and prints where.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use constant {
	THREADS => 32,
	SECONDS => 20,
	NAMES => 4,
	POOL_SIZE => 4,
};

my $program = "$FindBin::RealBin/dlock_pooler_stress";
if (!-x $program)
{
	# diag reaches prove's output; die's message only the test's log.
	my $missing = "$program is missing: build the CMake target dlock_pooler_stress "
	  . "and copy it next to the TAP tests (scripts/test.sh does)";
	diag($missing);
	die "$missing\n";
}

my $node = new_node('pooler_stress');
create_dlock($node,
	fenced => { table => 'pooler_stress', column => 'value', value => 'initial', rows => NAMES });
my $bouncer = start_pgbouncer($node, pool_size => POOL_SIZE, max_client_conn => 40);

my ($out, $err) = ('', '');
my $ran = IPC::Run::run(
	[ $program, '--pooler', $bouncer->{connstr}, '--direct', $node->connstr('postgres'),
	  '--threads', THREADS, '--seconds', SECONDS, '--names', NAMES ],
	'>', \$out, '2>', \$err,
	IPC::Run::timeout(SECONDS + $PostgreSQL::Test::Utils::timeout_default));
note $out;
ok($ran, 'the stress run passes its checks (exit status 0)') or diag "$out$err";
like($out, qr/^threads: ${\ THREADS}, lease names: ${\ NAMES}$/m,
	'with 32 clients on 4 lease names');
like($out, qr/^cycles: [1-9]\d* in /m, 'cycles were completed');
like($out, qr/^errors: 0$/m, 'no call failed');
like($out, qr/^violations: 0$/m, 'no rule was broken');

# The backends the clients' writes and releases ran on, and PgBouncer's
# server connections.
my ($count, $pids) = $out =~ /^backends: (\d+) \(pids([\d ]*)\)$/m;
my @pids = split ' ', $pids // '';
ok(@pids >= 1 && @pids <= POOL_SIZE, "the clients ran on 1 to 4 server backends (@pids)");
is($count, scalar @pids, 'the count is of the pids listed');
my @servers = grep { $_->{database} eq 'postgres' } pgbouncer_show($bouncer, 'SERVERS');
ok(@servers <= POOL_SIZE, 'PgBouncer holds at most 4 server connections');
my %server_pid = map { $_->{remote_pid} => 1 } @servers;
is_deeply([ grep { !$server_pid{$_} } @pids ], [],
	'every backend the clients saw is one of them');
my ($pool) = grep { $_->{database} eq 'postgres' } pgbouncer_show($bouncer, 'POOLS');
is($pool->{sv_active} + $pool->{sv_idle} + $pool->{sv_used} + $pool->{sv_tested}
	  + $pool->{sv_login},
	scalar @servers, 'SHOW POOLS counts the same server connections');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM pg_stat_activity
		 WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()}),
	scalar @servers, 'and the server has no other client backend');

# The server's own account: every lease released by its last holder, whose
# write is the row's.
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM dlock.leases AS l
		  JOIN pooler_stress AS p ON l.name = 'pooler-stress-' || p.id
		 WHERE l.state = 'released' AND p.fence_token = l.token
		   AND p.value = l.owner || '/' || l.token}),
	NAMES, 'each lease is released, and its row holds its last holder\'s write');

stop_pgbouncer($bouncer);
$node->stop;
done_testing();
