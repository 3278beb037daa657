# The README's quickstart, taken from README.md as it stands, run by two
# clients at once: every client either holds the lease and writes under
# it, or is told the lease is busy and touches nothing (never using
# another holder's token), and no client fails.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# The first sql block of README.md: its set-up (up to the first line
# taking the lease) and the rest, which each client runs.
# The test command copies README.md next to the tests' directory.
my $readme = PostgreSQL::Test::Utils::slurp_file("$FindBin::RealBin/../README.md");
my ($quickstart) = $readme =~ /```sql\n(.*?)```/s or die 'README.md has no sql block';
my ($setup, $client) = $quickstart =~ /\A(.*?)(^-- Take the lease.*)\z/ms
  or die 'the quickstart no longer starts its lease part with "-- Take the lease"';

my $node = new_node('quickstart');
$node->safe_psql('postgres', $setup);

# Runs the client part in $n psql processes started together; their
# outputs and exit codes.
sub run_clients
{
	my ($n) = @_;
	my @clients;
	for my $i (1 .. $n)
	{
		# IPC::Run consumes its input buffer: each client gets a copy.
		my ($in, $out, $err) = ($client, '', '');
		my $h = IPC::Run::start(
			[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', '-' ],
			'<', \$in, '>', \$out, '2>', \$err);
		push @clients, { h => $h, out => \$out, err => \$err };
	}
	return map { $_->{h}->finish; { out => ${ $_->{out} } . ${ $_->{err} }, rc => $_->{h}->result(0) } } @clients;
}

sub busy { return $_[0]{out} =~ /nightly-report is busy/ }

# While another owner holds the lease, both clients are told it is busy
# and write nothing.
my $other = grant_token($node, 'nightly-report', 'someone-else');
my @r = run_clients(2);
is_deeply([ map { $_->{rc} } @r ], [ 0, 0 ], 'both clients finish without an error');
ok((busy($r[0]) && busy($r[1])), 'both are told the lease is busy');
is($node->safe_psql('postgres', q{SELECT status || ' ' || coalesce(fence_token, 0) FROM reports}),
	'running 0', 'and neither wrote under the other holder\'s token');
is($node->safe_psql('postgres', q{SELECT owner || ' ' || state FROM dlock.leases}),
	'someone-else held', 'nor renewed or released its lease');
$node->safe_psql('postgres', "SELECT dlock.release('nightly-report', $other)");

# Free: the two race; whoever gets it writes, renews and releases, the
# other is told it is busy or runs after the first has released. Each
# holder has a grant of its own (a new token), never the other's.
my $last_token = q{SELECT coalesce(pg_sequence_last_value('dlock.token_seq'), 0)};
my $tokens_before = $node->safe_psql('postgres', $last_token);
@r = run_clients(2);
is_deeply([ map { $_->{rc} } @r ], [ 0, 0 ], 'racing: both clients finish without an error');
my $holders = grep { !busy($_) } @r;
cmp_ok($holders, '>=', 1, 'racing: at least one held the lease');
cmp_ok($node->safe_psql('postgres', $last_token) - $tokens_before,
	'>=', $holders, 'racing: each holder had a grant, and a token, of its own');
is($node->safe_psql('postgres', q{SELECT count(*) FROM dlock.lease_store WHERE owner LIKE 'report-worker-%' AND released_at IS NULL}),
	'0', 'racing: every grant was released');
is($node->safe_psql('postgres', q{SELECT status FROM reports}), 'done', 'racing: the report was written');
is( $node->safe_psql('postgres', q{SELECT fence_token = (SELECT token FROM dlock.lease_store) FROM reports}),
	't', 'under the last grant\'s token');
$node->stop;
done_testing();
