# Leases behind PgBouncer in transaction mode. With one server connection
# in the pool, two clients' transactions run in the same backend, so they
# share its default owner (application_name:pid:backend start). A lease
# taken with the default owner must therefore not be handed to the other
# client as a retry: its try_acquire gets NULL. An explicit owner is the
# caller's own name for itself, so a retry with it gets the same token back
# whichever client sends it, and another explicit owner gets NULL.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node('node');
create_dlock($node);
my $bouncer = start_pgbouncer($node, pool_size => 1);

# psql takes the last -d, so the node's helpers connect through PgBouncer.
my @via_bouncer = (extra_params => [ '-d', $bouncer->{connstr} ]);
is($node->safe_psql('postgres', 'SELECT 1', @via_bouncer), '1', 'PgBouncer accepts connections');

my $first = $node->background_psql('postgres', @via_bouncer);
my $second = $node->background_psql('postgres', @via_bouncer);
my ($first_pid, $second_pid) =
  map { $_->query_safe('SELECT pg_backend_pid()') } $first, $second;
is($second_pid, $first_pid, 'both clients run in the same server backend');
is( $second->query_safe('SELECT dlock.default_owner()'),
	$first->query_safe('SELECT dlock.default_owner()'),
	'so they share its default owner');

# The lease 'job' through each client: its token, '' for NULL.
sub job_token
{
	my ($client, $owner) = @_;
	my $args = defined $owner ? "'job', '1 min', '$owner'" : q{'job', '1 min'};
	return $client->query_safe("SELECT token FROM dlock.try_acquire($args)");
}

# The state of 'job' as the server has it, read past PgBouncer.
sub job_state
{
	return $node->safe_psql('postgres',
		q{SELECT state FROM dlock.leases WHERE name = 'job'});
}

# The default owner.
my $token = job_token($first);
like($token, qr/^[0-9]+$/, 'default owner: the first client gets a token');
is(job_token($second), '',
	'default owner: the second client gets NULL, not the first one\'s grant');
is($first->query_safe("SELECT dlock.release('job', $token)"),
	't', 'release through PgBouncer with the grant\'s token');
is(job_state(), 'released', 'the server has the lease released');

# An explicit owner.
my $explicit = job_token($first, 'worker-1');
like($explicit, qr/^[0-9]+$/, 'explicit owner: the first client gets a token');
cmp_ok($explicit, '>', $token, 'a new one');
is(job_token($second, 'worker-1'),
	$explicit, 'explicit owner: a retry from the second client gets the same token');
is(job_token($second, 'worker-2'), '', 'another explicit owner gets NULL');
is($second->query_safe("SELECT dlock.release('job', $explicit)"),
	't', 'release through PgBouncer from the other client');
is(job_state(), 'released', 'the server has the lease released again');

is($second->query_safe('SELECT pg_backend_pid()'),
	$first_pid, 'every statement ran in that one backend');
$_->quit for $first, $second;
stop_pgbouncer($bouncer);
$node->stop;
done_testing();
