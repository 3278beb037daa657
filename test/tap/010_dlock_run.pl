# dlock run with real processes, the lease kept to the end (011 loses it):
#  - COMMAND gets DLOCK_NAME, DLOCK_TOKEN, DLOCK_OWNER (host:pid of dlock
#    by default) and DLOCK_EXPIRES_AT, the grant's; dlock exits with its
#    status (128 + N when signal N killed it) and releases the lease;
#  - a busy lease: exit 75 (or --conflict-exit-code) at once, COMMAND not
#    run; with --wait, the lease comes right after the holder's release,
#    with the next token;
#  - SIGINT, SIGTERM and SIGHUP to dlock reach COMMAND, and the lease
#    stays held until COMMAND has ended;
#  - what COMMAND leaves in its process group gets SIGTERM once COMMAND
#    has exited, and the lease is released only after it has ended;
#  - dlock acquire from a script: each call an owner of its own, so a
#    second acquire from the same shell finds the lease busy; renew and
#    release by NAME and TOKEN from any process, the owner checked only
#    with --owner, and from within dlock run's COMMAND;
#  - dlock status: control characters in a name escaped, a NAME not found
#    told on stderr, exit 1;
#  - a database without dlock: the error says to CREATE EXTENSION.
# dlock is the one on the PATH (scripts/test.sh installs it).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use DlockRun;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Sys::Hostname;
use Test::More;

my $node = new_node('run');
create_dlock($node);
# dlock connects with the PG* variables, its default.
my %pg_env = (PGHOST => $node->host, PGPORT => $node->port, PGDATABASE => 'postgres');

# The lease $name as "token|owner|state".
sub lease { return lease_columns($node, $_[0], qw(token owner state)); }

# dlock run NAME with these options and script, connected directly.
sub run
{
	my ($name, $options, $script, %opt) = @_;
	return start_run(name => $name, options => [ '--kill-after', '1s', @$options ],
		script => $script, env => { %pg_env, %{ $opt{env} // {} } }, args => $opt{args});
}

# ------------------------------------------------ environment and exit status

my $r = run('env', [ '--ttl', '30s' ], q{record_env; exit 7});
is(run_exit_code($r), 7, 'dlock run exits with COMMAND\'s status');
my $env = read_env($r);
is($env->{name}, 'env', 'DLOCK_NAME');
like($env->{owner}, qr/^\Q@{[hostname()]}:$r->{pid}:\E[0-9a-f]{8}$/,
	'DLOCK_OWNER: host:pid:R of dlock, R eight random hex digits');
is(lease('env'), "$env->{token}|$env->{owner}|released",
	'DLOCK_TOKEN is the grant\'s token, released once COMMAND ended');
is( $node->safe_psql('postgres', qq{
		SELECT '$env->{expires_at}'::timestamptz = acquired_at + ttl, ttl
		  FROM dlock.leases WHERE name = 'env'}),
	't|00:00:30', 'DLOCK_EXPIRES_AT: the grant\'s expiry, for the ttl asked');
is(run_stderr($r), '', 'nothing on stderr');

$r = run('env', [ '--ttl', '30s' ], q{record_env; kill -KILL $$});
is(run_exit_code($r), 128 + 9, 'COMMAND killed by SIGKILL: 137');
my $killed = read_env($r);
is(lease('env'), "$killed->{token}|$killed->{owner}|released", 'the lease is released too');
is($killed->{token}, $env->{token} + 1, 'it was the next grant');

# ------------------------------------------------ a busy lease

my $holder = run('busy', [ '--ttl', '30s' ], TRAP_TERM . q{
record_env; linger; mark ended});
my $held = read_env($holder);

my $busy = run('busy', [ '--ttl', '30s' ], q{record_env});
is(run_exit_code($busy), 75, 'busy: exit 75');
is(run_stderr($busy), "dlock: lease busy is busy\n", 'with one line on stderr');
ok(!defined marker($busy, 'env'), 'COMMAND was not run');

$busy = run('busy', [ '--ttl', '30s', '--conflict-exit-code', '0' ], q{record_env});
is(run_exit_code($busy), 0, 'busy with --conflict-exit-code 0: exit 0');
ok(!defined marker($busy, 'env'), 'COMMAND was not run');

$busy = run('busy', [ '--ttl', '30s', '--quiet' ], q{record_env});
is(run_exit_code($busy), 75, 'busy with --quiet: exit 75');
is(run_stderr($busy), '', 'nothing on stderr');

# The waiter's script checks that the holder's script had ended when it
# started, from the holder's marker file.
my $waiter = run('busy', [ '--ttl', '30s', '--wait', '30s' ], q{
record_env; mark start
[ -e "$2/ended" ] && echo after >"$DIR/order"}, env => { PGAPPNAME => 'waiter' },
	args => [ $holder->{dir} ]);
wait_queued($node, 'waiter', 1);
ok(!defined marker($waiter, 'env'), '--wait: COMMAND waits in acquire\'s queue');
is(lease('busy'), "$held->{token}|$held->{owner}|held", 'while the holder holds the lease');
go($holder);
is(run_exit_code($holder), 0, 'the holder ends');
is(run_exit_code($waiter), 0, 'the waiter runs and ends');
my $next = read_env($waiter);
is($next->{token}, $held->{token} + 1, 'with the next token');
is(marker($waiter, 'order'), 'after', 'its COMMAND started after the holder\'s ended');
cmp_ok(marker($waiter, 'start'), '>=', marker($holder, 'ended'), 'by the clock too');
is(lease('busy'), "$next->{token}|$next->{owner}|released", 'and it released the lease');

# A wait in the queue longer than the waiter's ttl: its lease counts from
# the grant, not from when dlock sent its acquire, so COMMAND runs.
$holder = run('long-wait', [ '--ttl', '30s' ], TRAP_TERM . q{
record_env; linger});
read_env($holder);
$waiter = run('long-wait', [ '--ttl', '4s', '--wait', '60s' ], q{
record_env}, env => { PGAPPNAME => 'long-waiter' });
wait_queued($node, 'long-waiter', 1);
sleep(5);    # longer than the waiter's ttl: the case to test
go($holder);
is(run_exit_code($holder), 0, 'the holder ends');
is(run_exit_code($waiter), 0, 'a waiter that waited past its 4 s ttl runs COMMAND and ends');
$next = read_env($waiter);
is(lease('long-wait'), "$next->{token}|$next->{owner}|released", 'and releases its grant');
is(run_stderr($waiter), '', 'nothing on stderr: the lease was never lost');

# ------------------------------------------------ signals to dlock

# COMMAND traps the signal and lingers: dlock keeps the lease meanwhile.
for my $sig (qw(INT TERM HUP))
{
	my $name = lc "sig$sig";
	$r = run($name, [ '--ttl', '30s' ], qq{
trap 'mark got_$sig' $sig
record_env; linger; exit 3});
	$env = read_env($r);
	kill $sig, $r->{pid};
	wait_marker($r, "got_$sig");
	is(run_exit_code($r, 'nowait'), undef, "SIG$sig to dlock reached COMMAND, which lingers");
	is(lease($name), "$env->{token}|$env->{owner}|held", 'the lease is still held meanwhile');
	go($r);
	is(run_exit_code($r), 3, 'COMMAND ends: dlock exits with its status');
	is(lease($name), "$env->{token}|$env->{owner}|released", 'and only then releases');
	is(run_stderr($r), '', 'nothing on stderr');
}

# ------------------------------------------------ COMMAND's leftovers

# COMMAND exits 0 at once, leaving a process in its group that marks
# SIGTERM and lingers.
$r = run('leftover', [ '--ttl', '30s' ], q{
(trap 'mark term; exit 0' TERM; mark started; linger) &
until [ -e "$DIR/started" ]; do sleep 0.01; done
record_env; exit 0});
is(run_exit_code($r), 0, 'COMMAND leaving a process behind: its status');
$env = read_env($r);
is(lease('leftover'), "$env->{token}|$env->{owner}|released", 'the lease is released');
my $released_at = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM released_at) FROM dlock.leases WHERE name = 'leftover'");
my $term = marker($r, 'term');
ok(defined $term, 'what it left behind got SIGTERM');
cmp_ok($released_at, '>', $term // 'inf', 'before the release');

# ------------------------------------------------ acquire, renew, release

# bash -c SCRIPT with the PG* variables: what it printed on stdout and on
# stderr, each without its last newline.
sub shell
{
	my ($script) = @_;
	local @ENV{ keys %pg_env } = values %pg_env;
	return run_command([ 'bash', '-c', $script ]);
}

# The lease $name as "token|state|renew_count".
sub lease_renewals
{
	my ($name) = @_;
	return $node->safe_psql('postgres',
		"SELECT token || '|' || state || '|' || renew_count FROM dlock.leases WHERE name = '$name'");
}

my ($out, $err) = shell(q{
dlock acquire --ttl 1m twice; echo "exit $?"
dlock acquire --ttl 1m twice; echo "exit $?"});
my ($token) = split /\|/, lease('twice');
is($out, "$token\nexit 0\nexit 75", 'two acquires from one shell: the second finds the lease busy');
is($err, 'dlock: lease twice is busy', 'and says so');

($out, $err) = shell(qq{dlock renew twice $token >/dev/null; echo "exit \$?"});
is("$out|$err", 'exit 0|', 'renew from another process, without --owner');
is(lease_renewals('twice'), "$token|held|1", 'renewed');
($out, $err) = shell(qq{dlock renew --owner someone-else twice $token; echo "exit \$?"});
is($out, 'exit 1', 'renew with another --owner: exit 1');
like($err, qr/^dlock: LD002: lease "twice" is not held with token $token by owner "someone-else"/,
	'LD002: the server checked the owner');
($out, $err) = shell(qq{dlock release --owner someone-else twice $token; echo "exit \$?"});
is("$out|$err", "exit 1|dlock: lease twice is not held with token $token by owner someone-else",
	'release with another --owner: exit 1');
is(lease_renewals('twice'), "$token|held|1", 'the lease is still held');
($out, $err) = shell(qq{dlock release twice $token; echo "exit \$?"});
is("$out|$err", 'exit 0|', 'release from another process, without --owner');
is(lease_renewals('twice'), "$token|released|1", 'released');
($out, $err) = shell(qq{dlock release twice $token; echo "exit \$?"});
is("$out|$err", "exit 1|dlock: lease twice is not held with token $token",
	'released again: exit 1');

# COMMAND renews and releases dlock run's own grant by its name and token.
$r = run('inner', [ '--ttl', '30s' ], q{
record_env
dlock renew "$DLOCK_NAME" "$DLOCK_TOKEN" >/dev/null || exit 1
dlock release "$DLOCK_NAME" "$DLOCK_TOKEN" || exit 2});
is(run_exit_code($r), 0, 'COMMAND renews and releases with DLOCK_NAME and DLOCK_TOKEN');
$env = read_env($r);
is(lease('inner'), "$env->{token}|$env->{owner}|released", 'the grant dlock run held');
is( run_stderr($r),
	"dlock: warning: lease inner (token $env->{token}) was no longer held when COMMAND ended\n",
	'dlock run then finds it released');

# ------------------------------------------------ dlock status

$node->safe_psql('postgres',
	q{SELECT dlock.try_acquire(E'odd\nheld  me  1', '1 min', owner => 'me')});
($out, $err) = shell(q{
dlock status "$(printf 'odd\nheld  me  1')" twice nosuch twice nosuch; echo "exit $?"});
my $rows = qr/^name +state +owner +token +valid for +held for\n/
  . qr/odd\\nheld  me  1  held +me +\d+ +\d+\.\d{3} +\d+\.\d{3}\n/
  . qr/twice +released +\S+ +$token\nexit 1\z/;
like( $out, qr/$rows/,
	'dlock status: a line break in a name escaped, one row per lease');
is($err, 'dlock: no lease nosuch', 'a NAME not found, told once on stderr');

# ------------------------------------------------ a database without dlock

$node->safe_psql('postgres', 'CREATE DATABASE plain');
($out, $err) = shell(q{PGDATABASE=plain dlock acquire --ttl 1m x; echo "exit $?"});
is("$out|$err",
	'exit 1|dlock: 3F000: schema "dlock" does not exist'
	  . ' (is dlock installed in this database? CREATE EXTENSION dlock)',
	'acquire in a database without dlock: the hint');
$node->safe_psql('plain', 'CREATE SCHEMA dlock');
($out, $err) = shell(q{PGDATABASE=plain dlock renew x 1; echo "exit $?"});
is($out, 'exit 1', 'renew without dlock\'s functions: exit 1');
like($err, qr/^dlock: 42883: function dlock\.renew\(.*\) does not exist \(is dlock installed in this database, and up to date\? CREATE EXTENSION dlock, or ALTER EXTENSION dlock UPDATE\)\z/,
	'the hint');

$node->stop;
done_testing();
