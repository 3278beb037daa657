# dlock run losing its lease, with real processes: COMMAND's process group
# gets SIGTERM, then SIGKILL after --kill-after, dlock exits 76 and says
# why on stderr, and COMMAND is dead before the server's expiry, so no
# other client can have been granted the lease while it ran:
#  - force_release: at once through LISTEN; behind PgBouncer (--pooler,
#    no LISTEN) at the next renewal, within a third of the ttl;
#  - a COMMAND that ignores SIGTERM dies by SIGKILL after --kill-after;
#  - the server stopped, or PgBouncer stopped (SIGSTOP): at the keeper's
#    local deadline, before the expiry the last renewal set;
#  - dlock itself stopped (SIGSTOP) past the expiry: its watchdog stops
#    COMMAND meanwhile (017_dlock_run_watchdog.pl), and on SIGCONT dlock
#    says the lease was lost;
#  - dlock itself killed (SIGKILL): COMMAND dies with it, before the
#    expiry, and the lease is left to expire.
# Latencies are printed with note(); the assertions bound them loosely,
# where promptness is the point (see docs/development.md's Tests).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use DlockRun;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = new_node('lost');
create_dlock($node);
my $role = $node->safe_psql('postgres', 'SELECT current_user');
my $bouncer = start_pgbouncer($node, pool_size => 2);
my %direct = (PGHOST => $node->host, PGPORT => $node->port, PGDATABASE => 'postgres');

# A COMMAND that keeps the lease until the test ends it.
my $holds = TRAP_TERM . q{
record_env; linger};
# The same, ignoring SIGTERM: only SIGKILL ends it.
my $ignores = IGNORE_TERM . q{
record_env; linger};

# The lease $name as the server has it, read directly: a hash of token,
# state, expires_at (seconds since the epoch), renew_count, forced_by,
# force_reason.
sub lease
{
	my ($name) = @_;
	my @v = split /\|/, $node->safe_psql('postgres', qq{
		SELECT token, state, extract(epoch FROM expires_at), renew_count,
		       forced_by, force_reason
		  FROM dlock.leases WHERE name = '$name'}), -1;
	my %l;
	@l{qw(token state expires_at renew_count forced_by force_reason)} = @v;
	return \%l;
}

# Waits until the keeper has renewed lease $name once more than now, and
# returns the lease then: the next renewal is a third of the ttl away.
sub after_renewal
{
	my ($name) = @_;
	my $count = lease($name)->{renew_count};
	my $l;
	poll_until(sub { $l = lease($name); $l->{renew_count} > $count })
	  or die "lease $name was not renewed";
	return $l;
}

# force_release of $name from psql, and the server's clock just before
# its commit, which sends the notification.
sub force_release
{
	my ($name, $reason) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT extract(epoch FROM clock_timestamp())
		  FROM dlock.force_release('$name', '$reason')});
}

sub ms { return sprintf('%.0f ms', 1000 * $_[0]) }

# ------------------------------------------------ force_release, LISTEN

my $r = start_run(name => 'listen', options => [ '--ttl', '30s', '--kill-after', '1s' ],
	script => $holds, env => \%direct);
my $env = read_env($r);
my $forced_at = force_release('listen', 'deploy');
my $term = wait_marker($r, 'term');
is(run_exit_code($r), 76, 'force-released: dlock exits 76');
is(run_stderr($r), "dlock: lease listen lost: force-released by $role: deploy\n",
	'saying who force-released it and why');
note('force_release to SIGTERM through LISTEN: ' . ms($term - $forced_at));
cmp_ok($term - $forced_at, '<', 1, 'COMMAND got SIGTERM within 1 s of the commit');
cmp_ok($term, '>', $forced_at, 'after it');
my $l = lease('listen');
is("$l->{token}|$l->{state}|$l->{forced_by}|$l->{force_reason}",
	"$env->{token}|released|$role|deploy", 'the grant COMMAND had, force-released');

# ------------------------------------------------ SIGKILL after --kill-after

$r = start_run(name => 'stubborn', options => [ '--ttl', '30s', '--kill-after', '1s' ],
	script => $ignores, env => \%direct);
$env = read_env($r);
force_release('stubborn', 'deploy');
$term = wait_marker($r, 'term');
my $dead = dead_at($env->{pid});
is(run_exit_code($r), 76, 'COMMAND ignoring SIGTERM: dlock exits 76');
note('SIGTERM to death of a COMMAND that ignores SIGTERM, --kill-after 1s: ' . ms($dead - $term));
# dlock sends SIGKILL a fraction of a millisecond later than --kill-after
# after SIGTERM; the witness marks SIGTERM when it gets to run, which on a
# busy machine can be some milliseconds later than that: 50 ms of slack.
cmp_ok($dead - $term, '>=', 1 - 0.05, 'it lived on for --kill-after after SIGTERM');
cmp_ok($dead - $term, '<', 1 + 1, 'and was killed then');

# ------------------------------------------------ force_release, PgBouncer

my @pooled = ('--pooler', '--conn', $bouncer->{connstr});
$r = start_run(name => 'pooled', options => [ '--ttl', '6s', '--kill-after', '1s', @pooled ],
	script => $holds);
$env = read_env($r);
after_renewal('pooled');
$forced_at = force_release('pooled', 'deploy');
$term = wait_marker($r, 'term');
is(run_exit_code($r), 76, 'force-released behind PgBouncer: dlock exits 76');
is( run_stderr($r),
	"dlock: lease pooled lost: renewal refused: lease \"pooled\" is not held with token $env->{token}"
	  . " (The lease was force-released by $role: deploy; its latest token is $env->{token}.)\n",
	'the refused renewal says who force-released it and why');
note('force_release to SIGTERM through PgBouncer (renewals every 2 s): ' . ms($term - $forced_at));
cmp_ok($term - $forced_at, '<', 2 + 1, 'COMMAND got SIGTERM by the next renewal (ttl / 3)');
$l = lease('pooled');
is("$l->{token}|$l->{state}|$l->{forced_by}|$l->{force_reason}",
	"$env->{token}|released|$role|deploy", 'the grant COMMAND had, force-released');

# ------------------------------------------------ PgBouncer stopped

# The server stays up, so its expiry is the one other clients see. The
# renewals stop with PgBouncer; read the expiry after the last one.
$r = start_run(name => 'paused-pooler',
	options => [ '--ttl', '6s', '--kill-after', '1s', @pooled ], script => $ignores);
$env = read_env($r);
after_renewal('paused-pooler');
kill 'STOP', $bouncer->{pid};
my $stopped_at = time;
$l = lease('paused-pooler');
$term = wait_marker($r, 'term');
$dead = dead_at($env->{pid});
is(run_exit_code($r), 76, 'PgBouncer stopped: dlock exits 76');
like( run_stderr($r), qr/^dlock: lease paused-pooler lost: not renewed in time \(.+\)\n\z/,
	'the lease was not renewed in time');
is(lease('paused-pooler')->{expires_at}, $l->{expires_at}, 'no renewal reached the server meanwhile');
note('PgBouncer stopped: SIGTERM ' . ms($term - $stopped_at) . ' after the stop, '
	  . ms($l->{expires_at} - $term) . ' before the expiry; '
	  . 'COMMAND, ignoring SIGTERM, died ' . ms($l->{expires_at} - $dead) . ' before it');
cmp_ok($term + 1, '<', $l->{expires_at}, 'SIGTERM came --kill-after before the expiry');
cmp_ok($dead, '<', $l->{expires_at}, 'COMMAND was dead before the expiry');
kill 'CONT', $bouncer->{pid};

# Resumed: the next client through PgBouncer gets the lease once it has
# expired, with the next token.
my $next = start_run(name => 'paused-pooler',
	options => [ '--ttl', '6s', '--kill-after', '1s', '--wait', '30s', @pooled ],
	script => q{record_env});
is(run_exit_code($next), 0, 'resumed: the next client runs');
is(read_env($next)->{token}, $env->{token} + 1, 'with the next token');
cmp_ok( $node->safe_psql('postgres',
		q{SELECT extract(epoch FROM acquired_at) FROM dlock.leases WHERE name = 'paused-pooler'}),
	'>=', $l->{expires_at}, 'granted after the expiry');
stop_pgbouncer($bouncer);

# ------------------------------------------------ dlock stopped past the expiry

$r = start_run(name => 'paused', options => [ '--ttl', '3s', '--kill-after', '500ms' ],
	script => $holds, env => \%direct);
$env = read_env($r);
kill 'STOP', $r->{pid};
ok(poll_until(sub { lease('paused')->{state} eq 'expired' }), 'dlock stopped: the lease expires');
my $resumed_at = time;
kill 'CONT', $r->{pid};
$term = wait_marker($r, 'term');
is(run_exit_code($r), 76, 'resumed: dlock exits 76');
is(run_stderr($r), "dlock: lease paused lost: not renewed in time (no renewal failed: this process was paused or starved)\n",
	'the lease was not renewed in time');
note('dlock resumed past the expiry: SIGTERM after ' . ms($term - $resumed_at));
cmp_ok($term - $resumed_at, '<', 1, 'COMMAND got SIGTERM within 1 s');
$l = lease('paused');
is("$l->{token}|$l->{state}", "$env->{token}|expired",
	'the grant, neither renewed nor released after the expiry');

# ------------------------------------------------ dlock killed

# COMMAND traps SIGTERM: only SIGKILL would end it at once.
$r = start_run(name => 'killed', options => [ '--ttl', '6s', '--kill-after', '1s' ],
	script => $holds, env => \%direct);
$env = read_env($r);
$l = lease('killed');
my $killed_at = time;
kill 'KILL', $r->{pid};
is(run_exit_code($r), 128 + 9, 'dlock killed by SIGKILL');
$dead = dead_at($env->{pid});
ok(defined $dead, 'COMMAND died with dlock');
note('dlock killed: COMMAND died ' . ms($dead - $killed_at) . ' after it, '
	  . ms($l->{expires_at} - $dead) . ' before the expiry');
cmp_ok($dead, '<', $l->{expires_at}, 'before the expiry');
$l = lease('killed');
is("$l->{token}|$l->{state}", "$env->{token}|held", 'the grant, not released: it will expire');

# ------------------------------------------------ the server stopped

# ttl 9s: renewals every 3 s, and the server stops right after one. The
# keeper's local deadline is at most the expiry less 250 ms, kill-after
# and 1% of the validity.
$r = start_run(name => 'server', options => [ '--ttl', '9s', '--kill-after', '1s' ],
	script => $ignores, env => \%direct);
$env = read_env($r);
$l = after_renewal('server');
$node->stop('immediate');
$stopped_at = time;
$term = wait_marker($r, 'term');
$dead = dead_at($env->{pid});
is(run_exit_code($r), 76, 'server stopped: dlock exits 76');
like(run_stderr($r), qr/^dlock: lease server lost: not renewed in time \(.+\)\n\z/,
	'the lease was not renewed in time');
my $deadline = $l->{expires_at} - (0.25 + 1 + 0.01 * 9);
note('server stopped: SIGTERM ' . ms($term - $stopped_at) . ' after the stop, '
	  . ms($term - $deadline) . ' after the latest local deadline, '
	  . ms($l->{expires_at} - $term) . ' before the expiry; '
	  . 'COMMAND, ignoring SIGTERM, died ' . ms($l->{expires_at} - $dead) . ' before it');
cmp_ok($term, '>', $stopped_at, 'SIGTERM came after the stop');
cmp_ok($term + 1, '<', $l->{expires_at}, 'SIGTERM came --kill-after before the expiry');
cmp_ok($dead, '<', $l->{expires_at}, 'COMMAND was dead before the expiry');
$node->start;
my $after = lease('server');
is("$after->{token}|$after->{renew_count}|$after->{expires_at}",
	"$env->{token}|$l->{renew_count}|$l->{expires_at}",
	'restarted: the grant as last renewed before the stop');
ok(poll_until(sub { lease('server')->{state} eq 'expired' }), 'which then expires');

$node->stop;
done_testing();
