# Tokens after a failover or a point-in-time recovery.
#  (a) An asynchronous standby that missed the old primary's last grants is
#      promoted: its tokens start a new epoch on the new timeline and are
#      larger than every token the old primary acknowledged.
#  (b) With a synchronous standby, grants from sessions running with
#      synchronous_commit = off still wait for the standby, so every
#      acknowledged grant and the fenced writes made with them are on the
#      standby when it is promoted.
#  (c) A point-in-time recovery to before the last grants issues tokens
#      larger than every token issued before, the lost ones included.
use strict;
use warnings;
use Cwd;
use FindBin;
use lib $FindBin::RealBin;    # DlockTest.pm sits next to the tests
use DlockTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# Grants leases "$prefix-1" .. "$prefix-$count" on $node, one transaction
# each, in one session with synchronous_commit = off; returns the tokens.
sub grant_many
{
	my ($node, $prefix, $count, $owner) = @_;
	my $sql = "SET synchronous_commit = off;\n";
	$sql .= qq{SELECT token FROM dlock.try_acquire('$prefix-$_', '1 h', '$owner');\n}
	  for 1 .. $count;
	return split /\n/, $node->safe_psql('postgres', $sql);
}

# Names and tokens of every lease on $node, as "name=token" joined by ",".
sub lease_list
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT coalesce(string_agg(name || '=' || token, ',' ORDER BY token), '')
		    FROM dlock.leases});
}

sub max_of { my $m = shift; for (@_) { $m = $_ if $_ > $m } return $m; }

sub promote_and_wait
{
	my ($node) = @_;
	$node->promote;
	$node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'promotion did not finish';
	return;
}

############################################################################
# (a) Asynchronous standby, promoted after missing the last grants.
############################################################################
my $primary = new_node('primary', init => { allows_streaming => 1 });
create_dlock($primary);
my @replayed = grant_many($primary, 'replayed', 2, 'old-primary');
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;
push @replayed, grant_many($primary, 'streamed', 1, 'old-primary');
$primary->wait_for_catchup($standby);
is(lease_list($standby), 'replayed-1=1,replayed-2=2,streamed-1=3',
	'(a) the standby replayed the first grants');

# A hot standby answers reads; every write is 25006 (read-only).
is($standby->safe_psql('postgres', q{SELECT token FROM dlock.get('streamed-1')}),
	'3', '(a) dlock.get works on the standby');
for my $write (q{dlock.try_acquire('on-standby', '1 min')},
	q{dlock.renew('streamed-1', 3)}, q{dlock.release('streamed-1', 3)})
{
	is(sqlstate_of($standby, 'postgres', "SELECT $write"),
		'25006', "(a) $write on the standby: 25006");
}

# Replay paused: grants the standby receives but does not apply yet.
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$standby->poll_query_until('postgres',
	q{SELECT pg_get_wal_replay_pause_state() = 'paused'})
  or die 'replay did not pause';
my @received = grant_many($primary, 'received', 3, 'old-primary');
is(join(',', @received), '4,5,6', '(a) grants while replay is paused got 4..6');
my $lsn = $primary->lsn('flush');
$standby->poll_query_until('postgres',
	qq{SELECT pg_last_wal_receive_lsn() >= '$lsn'::pg_lsn})
  or die 'the standby did not receive the WAL';
is(lease_list($standby), 'replayed-1=1,replayed-2=2,streamed-1=3',
	'(a) the paused standby has received but not applied grants 4..6');

# The standby goes away; the primary grants more tokens than a sequence
# logs ahead in WAL (32), then crashes. The standby never sees these.
$standby->stop('fast');
my @missed = grant_many($primary, 'missed', 40, 'old-primary');
is(join(',', @missed), join(',', 7 .. 46), '(a) grants the standby misses got 7..46');
$primary->stop('immediate');
my $max_acked = max_of(@replayed, @received, @missed);

$standby->start;
promote_and_wait($standby);
is(lease_list($standby),
	'replayed-1=1,replayed-2=2,streamed-1=3,received-1=4,received-2=5,received-3=6',
	'(a) the promoted standby has the grants it received, none of those it missed');
my $seq_last = $standby->safe_psql('postgres', 'SELECT last_value FROM dlock.token_seq');
cmp_ok($seq_last, '<', $max_acked,
	'(a) the promoted standby\'s sequence is behind the old primary\'s last token');

my @after = grant_many($standby, 'after-failover', 3, 'new-primary');
is($after[0], FIRST_NEW_EPOCH_TOKEN,
	'(a) the first token on the new timeline is 2^41 + 1 (epoch 2)');
is(join(',', @after), join(',', map { FIRST_NEW_EPOCH_TOKEN + $_ } 0 .. 2),
	'(a) tokens go on from there');
is(scalar(grep { $_ <= $max_acked } @after), 0,
	"(a) every new token is greater than every token the old primary acknowledged ($max_acked)");
is($standby->safe_psql('postgres', 'SELECT timeline FROM dlock.token_epoch'),
	'2', '(a) dlock.token_epoch records timeline 2');
$standby->stop;

############################################################################
# (b) Synchronous standby: acknowledged grants survive a failover even from
#     sessions with synchronous_commit = off.
############################################################################
my $sprimary = new_node('sync_primary',
	init => { allows_streaming => 1 },
	conf => 'synchronous_commit = on');
create_dlock($sprimary,
	fenced => { table => 'docs', column => 'body', value => 'v0', rows => 4 },
	plain => 'plain');
$sprimary->backup('base');
my $sstandby = PostgreSQL::Test::Cluster->new('sync_standby');
$sstandby->init_from_backup($sprimary, 'base', has_streaming => 1);
$sstandby->start;
$sprimary->append_conf('postgresql.conf', q{synchronous_standby_names = 'sync_standby'});
$sprimary->reload;
$sprimary->poll_query_until('postgres', q{SELECT sync_state FROM pg_stat_replication
	WHERE application_name = 'sync_standby'}, 'sync')
  or die 'the standby did not become synchronous';

# With the synchronous standby down, an ordinary write from a session with
# synchronous_commit = off returns, but a grant waits for the standby.
$sstandby->stop('fast');
$sprimary->safe_psql('postgres', q{SET synchronous_commit = off;
INSERT INTO plain VALUES (1)});
pass('(b) a plain write with synchronous_commit = off does not wait for the standby');
my ($grant_out, $grant_err) = ('', '');
my $waiting = IPC::Run::start(
	[
		$sprimary->installed_command('psql'), '-XAtq',
		'-d', $sprimary->connstr('postgres'),
		'-c', 'SET synchronous_commit = off',
		'-c', q{SELECT token FROM dlock.try_acquire('waited', '1 h', 'patient')}
	],
	'>', \$grant_out, '2>', \$grant_err,
	IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
ok( $sprimary->poll_query_until('postgres', q{SELECT count(*) FROM pg_stat_activity
	WHERE wait_event = 'SyncRep' AND query LIKE '%try_acquire%'}, '1'),
	'(b) a grant with synchronous_commit = off waits for the synchronous standby');
$sstandby->start;
$waiting->finish;
is($grant_out, "1\n", '(b) the grant is acknowledged once the standby is back, token 1');
is($grant_err, '', '(b) with no warning');
my %acked = (waited => [ 1, 'patient' ]);

$sprimary->wait_for_catchup($sstandby);

# Replay paused: the standby flushes what it receives (which is what a
# commit waits for) but applies it only when promoted.
$sstandby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$sstandby->poll_query_until('postgres',
	q{SELECT pg_get_wal_replay_pause_state() = 'paused'})
  or die 'replay did not pause';

# Grants from sessions with synchronous_commit = off; docs 1 and 2 get a
# fenced write in their grant's transaction, docs 3 and 4 one from a
# session with the configured synchronous_commit.
for my $id (1 .. 4)
{
	my $owner = "worker-$id";
	my $out = $sprimary->safe_psql('postgres', qq{SET synchronous_commit = off;
BEGIN;
SELECT token FROM dlock.try_acquire('doc-$id', '1 h', '$owner') \\gset
SELECT :token;
SELECT dlock.fenced_update('docs', :token, '{"body": "v1-$id"}', '{"id": $id}')
  WHERE $id <= 2;
COMMIT;});
	my ($token) = split /\n/, $out;
	$acked{"doc-$id"} = [ $token, $owner ];
}
for my $id (3 .. 4)
{
	is($sprimary->safe_psql('postgres', qq{SELECT dlock.fenced_update('docs',
	    $acked{"doc-$id"}[0], '{"body": "v1-$id"}', '{"id": $id}')}),
		'1', "(b) fenced write of doc $id");
}
my %renewed;
my ($t, $expires) = split /\|/, $sprimary->safe_psql('postgres', qq{SET synchronous_commit = off;
SELECT token, expires_at FROM dlock.renew('doc-1', $acked{'doc-1'}[0], '2 h')});
is($t, $acked{'doc-1'}[0], '(b) renew of doc-1 keeps its token');
my @more = grant_many($sprimary, 'more', 5, 'batch');
$acked{"more-$_"} = [ $more[ $_ - 1 ], 'batch' ] for 1 .. 5;
is(join(',', map { $acked{$_}[0] } sort { $acked{$a}[0] <=> $acked{$b}[0] } keys %acked),
	'1,2,3,4,5,6,7,8,9,10', '(b) ten grants acknowledged with tokens 1..10');
is(lease_list($sstandby), 'waited=1',
	'(b) the paused standby has applied none of the grants after the first');

$sprimary->stop('immediate');
promote_and_wait($sstandby);

is(lease_rows($sstandby), held_rows(\%acked),
	'(b) every acknowledged grant is on the promoted standby, with token and owner');
is($sstandby->safe_psql('postgres',
	q{SELECT expires_at FROM dlock.leases WHERE name = 'doc-1'}),
	$expires, '(b) the renewal is there too');
is($sstandby->safe_psql('postgres',
	q{SELECT string_agg(id || ':' || body || ':' || fence_token, ',' ORDER BY id) FROM docs}),
	join(',', map { "$_:v1-$_:$acked{\"doc-$_\"}[0]" } 1 .. 4),
	'(b) every acknowledged fenced write is on the promoted standby');
is($sstandby->safe_psql('postgres', 'SELECT count(*) FROM plain'), '1',
	'(b) the plain write made while the standby was down came along');

my @new = grant_many($sstandby, 'after-failover', 3, 'new-primary');
is($new[0], FIRST_NEW_EPOCH_TOKEN,
	'(b) the first token on the new timeline is 2^41 + 1');
is(scalar(grep { $_ <= 10 } @new), 0,
	'(b) every new token is greater than every acknowledged one');
is($sstandby->safe_psql('postgres', qq{SELECT dlock.fenced_update('docs', $new[0],
	'{"body": "v2"}', '{"id": 1}')}), '1',
	'(b) a new token passes the fence of a row written on the old primary');
is(sqlstate_of($sstandby, 'postgres', qq{SELECT dlock.fenced_update('docs',
    $acked{'doc-1'}[0], '{"body": "stale"}', '{"id": 1}')}),
	'LD001', '(b) the old token is refused after it (LD001)');
$sstandby->stop;

############################################################################
# (c) Point-in-time recovery to before the last grants.
############################################################################
# The archive is named by an absolute path: the archiver runs in the data
# directory, and the test's own directories are relative unless TESTDIR is
# set.
my $origin = new_node('origin', init => { allows_streaming => 1 }, start => 0);
my $archive = Cwd::abs_path($origin->archive_dir);
$origin->append_conf('postgresql.conf', qq{
archive_mode = on
archive_command = 'cp "%p" "$archive/%f"'
});
$origin->start;
create_dlock($origin);
my @kept = grant_many($origin, 'in-backup', 3, 'origin');
$origin->backup('base');
push @kept, grant_many($origin, 'in-archive', 2, 'origin');
$origin->safe_psql('postgres', q{SELECT pg_create_restore_point('before_lost')});
my @lost = grant_many($origin, 'lost', 40, 'origin');
is(join(',', @kept, @lost), join(',', 1 .. 45), '(c) the origin granted tokens 1..45');
my $segment = $origin->safe_psql('postgres',
	'SELECT pg_walfile_name(pg_current_wal_lsn())');
$origin->safe_psql('postgres', 'SELECT pg_switch_wal()');
$origin->poll_query_until('postgres', qq{SELECT count(*) FROM pg_ls_archive_statusdir()
	WHERE name = '$segment.done'}, '1')
  or die "segment $segment was not archived";

my $pitr = PostgreSQL::Test::Cluster->new('pitr');
$pitr->init_from_backup($origin, 'base');
$pitr->set_recovery_mode;
$pitr->append_conf('postgresql.conf', qq{
restore_command = 'cp "$archive/%f" "%p"'
recovery_target_name = 'before_lost'
recovery_target_action = 'promote'
});
$pitr->start;
$pitr->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'point-in-time recovery did not finish';
is(lease_list($pitr),
	'in-backup-1=1,in-backup-2=2,in-backup-3=3,in-archive-1=4,in-archive-2=5',
	'(c) recovery stopped at the restore point: the last 40 grants are gone');
cmp_ok($pitr->safe_psql('postgres', 'SELECT last_value FROM dlock.token_seq'),
	'<', 45, '(c) the recovered sequence is behind the last token issued');
my @reissued = grant_many($pitr, 'after-pitr', 2, 'recovered');
is($reissued[0], FIRST_NEW_EPOCH_TOKEN,
	'(c) the first token after the recovery is 2^41 + 1');
is(scalar(grep { $_ <= 45 } @reissued), 0,
	'(c) every new token is greater than every token issued before, the lost ones included');
$pitr->stop;
$origin->stop;

done_testing();
