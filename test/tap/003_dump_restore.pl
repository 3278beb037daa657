# pg_dump -Fc and pg_restore carry dlock's state: lease rows, the holders
# of a shared lease, fences, rows
# written by fenced_update and the token sequence, into a new database of
# the same cluster and into a new cluster, where the role that acquired a
# lease need not exist. Tokens granted after the restore start a new epoch
# (dlock.token_epoch is not dumped), so they are larger than every token in
# the dump and than the tokens the old database issued after the dump was
# taken.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $old = new_node('old');
$old->safe_psql('postgres', 'CREATE DATABASE app');
$old->safe_psql('app', 'CREATE ROLE lease_taker LOGIN');
create_dlock($old,
	db => 'app',
	fenced => { table => 'docs', column => 'body', value => 'v0', rows => 4 },
	protect => 1);

# Leases a .. e, tokens 1 .. 5; b is released, d is held by lease_taker.
my %token;
$token{$_} = grant_token($old, $_, "owner-$_", db => 'app') for qw(a b c);
$old->safe_psql('app', qq{SELECT dlock.release('b', $token{b})});
$token{d} = grant_token($old, 'd', 'owner-d', db => 'app',
	before => 'SET ROLE lease_taker;');
$token{e} = grant_token($old, 'e', 'owner-e', db => 'app');
is(join(',', map { $token{$_} } qw(a b c d e)), '1,2,3,4,5',
	'five grants got tokens 1..5');
# And a shared lease f with two readers, tokens 6 and 7.
is($old->safe_psql('app', q{
SELECT token FROM dlock.try_acquire('f', '1 h', 'reader-1', shared => true);
SELECT token FROM dlock.try_acquire('f', '1 h', 'reader-2', shared => true)}),
	"6\n7", 'two readers of f got tokens 6 and 7');

# Fences and fenced writes.
is($old->safe_psql('app', qq{SELECT dlock.fence('bucket/x', $token{a});
SELECT dlock.fence('bucket/y', $token{e});
SELECT dlock.fenced_update('docs', $token{c}, '{"body": "v1"}', '{"id": 1}');
SELECT dlock.fenced_update('docs', $token{e}, '{"body": "v2"}', '{"id": 2}')}),
	"1\n5\n1\n1", 'fences accepted and fenced writes updated one row each');

# What the dump must carry, read the same way everywhere.
my %query = (
	leases => q{SELECT name, owner, token, state, acquired_at, expires_at, ttl,
	                   released_at, acquired_by, mode, permits, holders
	              FROM dlock.leases ORDER BY name, token},
	fences => q{SELECT resource, token, fenced_at FROM dlock.fences ORDER BY resource},
	docs => q{SELECT id, body, fence_token FROM docs ORDER BY id},
	sequence => q{SELECT last_value, is_called FROM dlock.token_seq},
	trigger => q{SELECT tgname FROM pg_trigger WHERE tgrelid = 'docs'::regclass},
);
my %before = map { $_ => $old->safe_psql('app', $query{$_}) } keys %query;
my $su = $old->safe_psql('app', 'SELECT current_user');
is($old->safe_psql('app',
	q{SELECT string_agg(name || ':' || state || ':' || acquired_by, ',' ORDER BY name)
	    FROM dlock.leases}),
	"a:held:$su,b:released:$su,c:held:$su,d:held:lease_taker,e:held:$su,f:held:$su,f:held:$su",
	'lease states and roles before the dump');
is($before{sequence}, '7|t', 'the token sequence stands at 7 before the dump');
my $max_dumped = 7;

my $dump = PostgreSQL::Test::Utils::tempdir() . '/app.dump';
$old->command_ok([ 'pg_dump', '-Fc', '-f', $dump, 'app' ], 'pg_dump -Fc');

# The old database goes on granting after the dump was taken.
my @after_dump;
push @after_dump, grant_token($old, "late-$_", 'old-db', db => 'app') for 1 .. 3;
is(join(',', @after_dump), '8,9,10', 'the old database granted 8..10 after the dump');

# Checks database $db of $node, restored from the dump; returns the tokens
# it granted.
sub check_restored
{
	my ($node, $db, $where) = @_;
	for my $what (sort keys %query)
	{
		is($node->safe_psql($db, $query{$what}), $before{$what},
			"$where: $what as dumped");
	}
	is($node->safe_psql($db, q{SELECT e.extversion = a.default_version
		FROM pg_extension e JOIN pg_available_extensions a ON a.name = e.extname
		WHERE e.extname = 'dlock'}), 't', "$where: dlock at its default version");

	# The restored leases still bind: the holder's retry keeps its token,
	# anyone else is refused; the released one can be granted again.
	is(grant_token($node, 'c', 'owner-c', db => $db),
		$token{c}, "$where: the holder of c gets its token back");
	is(grant_token($node, 'a', 'intruder', db => $db),
		'', "$where: a is still held");
	is(grant_token($node, 'f', 'writer', db => $db),
		'', "$where: f is still held by its readers");
	my @new = map { grant_token($node, $_, 'new-owner', db => $db) }
	  qw(b new-1 new-2);
	is(scalar(grep { $_ <= $max_dumped } @new), 0,
		"$where: new tokens (@new) are greater than every dumped token");
	is(join(',', @new), join(',', sort { $a <=> $b } @new),
		"$where: new tokens keep growing");

	# Fences and the protect trigger came along.
	is(sqlstate_of($node, $db, qq{SELECT dlock.fence('bucket/y', $token{d})}),
		'LD001', "$where: a fence refuses a token below the dumped one");
	is(sqlstate_of($node, $db, qq{SELECT dlock.fenced_update('docs', $token{c},
	    '{"body": "late"}', '{"id": 2}')}),
		'LD001', "$where: a fenced write below the row's token is refused");
	is(sqlstate_of($node, $db, 'UPDATE docs SET fence_token = 1 WHERE id = 2'),
		'LD001', "$where: the protect trigger refuses to lower a fence");
	is($node->safe_psql($db, qq{SELECT dlock.fence('bucket/y', $new[-1]);
SELECT dlock.fenced_update('docs', $new[-1], '{"body": "v3"}', '{"id": 2}')}),
		"$new[-1]\n1", "$where: the new token passes the fence and the fenced write");
	return @new;
}

# 1. A new database in the same cluster.
$old->safe_psql('postgres', 'CREATE DATABASE app_copy');
$old->command_ok([ 'pg_restore', '-d', 'app_copy', $dump ],
	'pg_restore into a new database of the same cluster');
my @same = check_restored($old, 'app_copy', 'same cluster');
is($same[0], FIRST_NEW_EPOCH_TOKEN,
	'same cluster: the first token is 2^41 + 1 (a new epoch)');
is(scalar(grep { $_ <= $after_dump[-1] } @same), 0,
	'same cluster: new tokens are greater than tokens the old database issued after the dump');

# 2. A new cluster, where role lease_taker does not exist.
my $new = new_node('new');
is($new->safe_psql('postgres',
	q{SELECT count(*) FROM pg_roles WHERE rolname = 'lease_taker'}),
	'0', 'the new cluster has no role lease_taker');
$new->safe_psql('postgres', 'CREATE DATABASE app');
$new->command_checks_all([ 'pg_restore', '-d', 'app', $dump ],
	0, [qr/^$/], [qr/^$/],
	'pg_restore into a new cluster succeeds without errors or warnings');
my @other = check_restored($new, 'app', 'new cluster');
is($other[0] >> 40, 2,
	'new cluster: the first token starts a new epoch (token >> 40 = 2)');
is($other[0], FIRST_NEW_EPOCH_TOKEN, 'new cluster: the first token is 2^41 + 1');
is(scalar(grep { $_ <= $after_dump[-1] } @other), 0,
	'new cluster: new tokens are greater than tokens the old database issued after the dump');
is($new->safe_psql('app', q{SELECT e.system_identifier = s.system_identifier
	FROM dlock.token_epoch AS e, pg_control_system() AS s}),
	't', 'new cluster: dlock.token_epoch now records the new cluster');

$new->stop;
$old->stop;
done_testing();
