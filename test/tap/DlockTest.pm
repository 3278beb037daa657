# Set-up and helpers shared by dlock's TAP tests: nodes, dlock with the
# tables the tests write, grants, SQLSTATEs and unflushed WAL.
package DlockTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(
  FIRST_NEW_EPOCH_TOKEN WAL_NOT_FLUSHED_SQL
  new_node create_dlock grant_token sqlstate_of unflushed_after
  lease_rows held_rows
);

# The first token issued on a new history (a promoted standby, a
# point-in-time recovery, a restored dump) by a database whose sequence
# stood below 2^40: the sequence jumps to 2 * 2^40 (see src/core/tokens.h).
use constant FIRST_NEW_EPOCH_TOKEN => (2 << 40) + 1;

# Bytes of WAL inserted but not yet flushed.
use constant WAL_NOT_FLUSHED_SQL =>
  'SELECT pg_current_wal_insert_lsn() - pg_current_wal_flush_lsn()';

# A slow WAL writer and no background writes, so that a commit that does
# not flush its own WAL stays unflushed long enough to be seen, and is lost
# in a crash.
my $slow_wal_writer = q{
wal_writer_delay = 10s
wal_writer_flush_after = 0
autovacuum = off
checkpoint_timeout = 1h
};

# A new node named $name, initialised and started. Options: init (a hash of
# PostgreSQL::Test::Cluster::init options), slow_wal_writer (true: the
# settings above), conf (more postgresql.conf lines), start (false: leave
# it stopped).
sub new_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%{ $opt{init} // {} });
	$node->append_conf('postgresql.conf', $slow_wal_writer)
	  if $opt{slow_wal_writer};
	$node->append_conf('postgresql.conf', $opt{conf}) if defined $opt{conf};
	$node->start if $opt{start} // 1;
	return $node;
}

# CREATE EXTENSION dlock in database db ('postgres' unless given), and
# what the options ask for:
#   fenced => { table, column, value, rows }: a table (id int PRIMARY KEY,
#     <column> text NOT NULL, fence_token bigint NOT NULL DEFAULT 0) with
#     ids 1 .. rows, <column> = value;
#   protect => true: the fenced table gets dlock.protect();
#   plain => name: a table (x int) for writes nobody fences;
#   checkpoint => true: a CHECKPOINT afterwards.
sub create_dlock
{
	my ($node, %opt) = @_;
	my $sql = "CREATE EXTENSION dlock;\n";
	if (my $f = $opt{fenced})
	{
		$sql .= qq{CREATE TABLE $f->{table} (id int PRIMARY KEY, $f->{column} text NOT NULL,
                   fence_token bigint NOT NULL DEFAULT 0);
INSERT INTO $f->{table} (id, $f->{column})
SELECT g, '$f->{value}' FROM generate_series(1, $f->{rows}) AS g;
};
		$sql .= "SELECT dlock.protect('$f->{table}');\n" if $opt{protect};
	}
	$sql .= "CREATE TABLE $opt{plain} (x int);\n" if $opt{plain};
	$sql .= "CHECKPOINT;\n" if $opt{checkpoint};
	$node->safe_psql($opt{db} // 'postgres', $sql);
	return;
}

# The token of dlock.try_acquire($name, '1 h', $owner) on $node, '' when
# it is refused. Options: db ('postgres' unless given), before (SQL run
# first in the same session, e.g. SET ROLE).
sub grant_token
{
	my ($node, $name, $owner, %opt) = @_;
	return $node->safe_psql($opt{db} // 'postgres',
		($opt{before} // '')
		  . qq{\nSELECT token FROM dlock.try_acquire('$name', '1 h', '$owner')});
}

# The SQLSTATE of the error $sql raises in database $db of $node, '' if
# it raises none.
sub sqlstate_of
{
	my ($node, $db, $sql) = @_;
	my ($out, $err) = ('', '');
	$node->psql($db, "\\set VERBOSITY sqlstate\n$sql",
		stdout => \$out, stderr => \$err);
	return $err =~ /ERROR:  ([0-9A-Z]{5})/ ? $1 : '';
}

# The output lines of $sql, then how many bytes of WAL are still not
# flushed right after it (in the same session), on database postgres.
sub unflushed_after
{
	my ($node, $sql) = @_;
	return split /\n/, $node->safe_psql('postgres', "$sql;\n" . WAL_NOT_FLUSHED_SQL);
}

# Every lease on $node as "name|token|owner|state" lines, in token order.
sub lease_rows
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT name, token, owner, state FROM dlock.leases ORDER BY token});
}

# The lines lease_rows() gives when every lease in %$acked (name =>
# [token, owner]) is held, and no other lease exists.
sub held_rows
{
	my ($acked) = @_;
	return join "\n", map { "$_|$acked->{$_}[0]|$acked->{$_}[1]|held" }
	  sort { $acked->{$a}[0] <=> $acked->{$b}[0] } keys %$acked;
}

1;
