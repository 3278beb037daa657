# Who holds and who waits, as operators see it in pg_stat_activity:
# dlock run names its session "dlock run NAME (OWNER)" and its keeper's
# "dlock keeper NAME (OWNER)", cut to the server's 63 bytes, unless the
# user names them (PGAPPNAME or application_name in the conninfo).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use DlockRun;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node('appname');
create_dlock($node);
# PGAPPNAME, which the test framework sets, unset: dlock's names show.
my %direct = (PGHOST => $node->host, PGPORT => $node->port, PGDATABASE => 'postgres',
	PGAPPNAME => undef);

my $holds = TRAP_TERM . q{
record_env; linger};

# The sessions whose application_name matches the LIKE $pattern, as
# "name|state" lines, sorted.
sub sessions
{
	my ($pattern) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT application_name || '|' || state FROM pg_stat_activity
		 WHERE application_name LIKE '$pattern' ORDER BY 1});
}

# ------------------------------------------------ holding and waiting

my $holder = start_run(name => 'report', options => [ '--ttl', '30s', '--owner', 'alpha' ],
	script => $holds, env => \%direct);
read_env($holder);
my $names = $node->safe_psql('postgres', q{
	SELECT application_name FROM pg_stat_activity
	 WHERE application_name LIKE 'dlock % report (alpha)' ORDER BY 1});
is($names, "dlock keeper report (alpha)\ndlock run report (alpha)",
	'holding: its session and its keeper\'s, named with the lease and the owner');

my $waiter = start_run(name => 'report',
	options => [ '--ttl', '30s', '--wait', '1m', '--owner', 'beta' ],
	script => $holds, env => \%direct);
ok(poll_until(sub { sessions('dlock run report (beta)') eq 'dlock run report (beta)|active' }),
	'waiting: its session, named, active in acquire');

# The user's name wins.
my $named = start_run(name => 'report',
	options => [ '--ttl', '30s', '--wait', '1m', '--owner', 'gamma' ],
	script => $holds, env => { %direct, PGAPPNAME => 'billing' });
ok(poll_until(sub { sessions('billing') eq 'billing|active' }),
	'PGAPPNAME set: the waiting session has that name');
is(sessions('% (gamma)'), '', 'and none of dlock\'s');

go($holder);
is(run_exit_code($holder), 0, 'the holder ends');
read_env($waiter);
is( $node->safe_psql('postgres', q{
	SELECT application_name FROM pg_stat_activity
	 WHERE application_name LIKE 'dlock % report (beta)' ORDER BY 1}),
	"dlock keeper report (beta)\ndlock run report (beta)",
	'the waiter holds: its keeper is named too');
go($waiter);
is(run_exit_code($waiter), 0, 'the waiter ends');
read_env($named);
is(sessions('billing'), "billing|idle\nbilling|idle", 'PGAPPNAME set: its keeper has that name too')
  or diag(sessions('%'));
go($named);
is(run_exit_code($named), 0, 'the third ends');

# ------------------------------------------------ a long name

# 63 bytes at most: "dlock run " and " (alpha)" leave 45 bytes of the name,
# 42 and "...".
my $long = 'n' x 60;
$holder = start_run(name => $long, options => [ '--ttl', '30s', '--owner', 'alpha' ],
	script => $holds, env => \%direct);
read_env($holder);
is( $node->safe_psql('postgres', q{
	SELECT application_name FROM pg_stat_activity
	 WHERE application_name LIKE 'dlock % (alpha)' ORDER BY 1}),
	'dlock keeper ' . ('n' x 39) . "... (alpha)\ndlock run " . ('n' x 42) . '... (alpha)',
	'a long name is cut, the owner kept');
go($holder);
is(run_exit_code($holder), 0, 'it ends');

$node->stop;
done_testing();
