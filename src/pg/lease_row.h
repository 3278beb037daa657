// A lease's row in dlock.lease_store: read through the primary key without
// SPI, decoded in one place, and written directly (heap-only updates while
// the page has room) with the lease's gate held.
#pragma once

#include <optional>

#include "../core/duration.h"
#include "../core/holders.h"
#include "../core/lease_rules.h"

#include "boundary.h"

namespace dlock::pg {

// The columns of dlock.lease_store, in the order the install script creates
// them (upgrades may only append columns): their attribute numbers, and
// their positions in a SELECT or RETURNING of DLOCK_LEASE_COLUMNS.
enum LeaseColumn : AttrNumber {
  kColName = 1,
  kColToken,
  kColAcquiredAt,
  kColExpiresAt,
  kColTtl,
  kColAcquiredBy,
  kColOwner,
  kColReleasedAt,
  kColRenewCount,
  kColLockDelay,
  kColMaxHold,
  kColBackendPid,
  kColBackendStart,
  kColForcedBy,
  kColForceReason,
  kColMinHold,
  kColumnCount = kColMinHold,
  // dlock.lease_holders: the columns above, then these.
  kColHolderShared,
  kColHolderPermits,
};
#define DLOCK_LEASE_COLUMNS                                        \
  "name, token, acquired_at, expires_at, ttl, acquired_by, owner," \
  " released_at, renew_count, lock_delay, max_hold, backend_pid,"  \
  " backend_start, forced_by, force_reason, min_hold"

// Whether dlock.lease_store is at least 0.6.0's (every column, and
// renew_count nullable); with dlock.lease_holders (0.7.0, see
// require_current_sql_objects()) it tells this library's SQL objects.
// Columns other than renew_count that a 0.5.0 library reads without a
// NULL check (ttl, lock_delay) stay NOT NULL: a session that loaded that
// library before the update may still read rows this one writes.
bool lease_store_is_current(TupleDesc desc);

// A row of dlock.lease_store or dlock.lease_holders, decoded: every
// column, as last committed (or as written earlier by this transaction),
// and the row version for the writes below. grant_of() gives what
// src/core's rules judge of it. Strings and the interval are palloc'd.
struct LeaseRow {
  const char* name;
  int64 token;
  const char* owner;
  TimestampTz acquired_at;
  TimestampTz expires_at;
  Interval* ttl;
  bool released;
  Micros lock_delay;         // 0: none
  Micros max_hold;           // 0: none
  Micros min_hold;           // 0: none
  const char* forced_by;     // who force-released it, or NULL
  const char* force_reason;  // and why
  const char* acquired_by;   // the role that acquired it
  int64 renew_count;
  bool in_holders;  // a row of dlock.lease_holders (else lease_store)
  bool shared;      // lease_holders: a shared holder
  int permits;      // 1, or a semaphore's permit count
  HeapTuple tuple;  // the row version read_lease() read (a copy), for the
                    // write_* below; NULL for rows read through SPI
};
DLOCK_PLAIN_STRUCT(LeaseRow);

// Decodes a row of the lease_store table, or of a SELECT or RETURNING of
// DLOCK_LEASE_COLUMNS, into memory of `into` (tuple left NULL).
LeaseRow decode_lease(HeapTuple tuple, TupleDesc desc, MemoryContext into);
// The same for a row of lease_holders, or a SELECT or RETURNING of
// DLOCK_HOLDER_COLUMNS.
LeaseRow decode_holder(HeapTuple tuple, TupleDesc desc, MemoryContext into);
#define DLOCK_HOLDER_COLUMNS DLOCK_LEASE_COLUMNS ", shared, permits"

// The row as src/core's holder rules see it (same_owner false).
dlock::Holder holder_of(const LeaseRow& row);

// The row's grant as src/core's rules see it (same_owner false).
LeaseGrant grant_of(const LeaseRow& row);

// Which rows a read sees: the transaction's snapshot (a fresh one in READ
// COMMITTED), or every committed row, whatever the isolation level. A
// decision taken with the lease's gate held reads the latest: a grant
// must not miss a holder because its snapshot is older.
enum class Seen { snapshot, latest };

// Rows of one name, decoded, each with a copy of the row version read
// (for the write_* below), in primary-key order.
struct LeaseRows {
  LeaseRow* rows;
  int count;
};
DLOCK_PLAIN_STRUCT(LeaseRows);

// dlock.lease_store (exclusive grants) or dlock.lease_holders (the
// holders of shared leases and semaphores).
enum class LeaseTable { store, holders };

// The rows of `name` in `table` (only the one with `token`, unless 0),
// read through the primary key as `seen` says: no SPI, no lock on a row,
// no WAL.
LeaseRows read_rows(LeaseTable table, const char* name, int64 token, Seen seen);

// The lease's lease_store row (with the transaction's snapshot unless
// told otherwise).
std::optional<LeaseRow> read_lease(const char* name,
                                   Seen seen = Seen::snapshot);

// Whether two reads of a lease found the same row version (or both none).
bool same_version(const std::optional<LeaseRow>& a,
                  const std::optional<LeaseRow>& b);

// 40001, as PostgreSQL's UPDATE raises it in a REPEATABLE READ or
// SERIALIZABLE transaction: the lease was written after the snapshot.
[[noreturn]] void raise_serialization_failure();

// The lease row, locked FOR SHARE until the transaction ends, so that no
// other transaction can write it (a takeover included). Runs SPI as the
// table owner itself.
std::optional<LeaseRow> read_lease_for_share(const char* name);

// Writes of a lease row that read_lease() (or holder_rows.h) returned, with the
// lease's gate held, as compare-and-set on that row version: each returns
// RowWrite::changed, writing nothing, if another transaction wrote the row
// after it was read (read it again and decide again). In a REPEATABLE READ
// or SERIALIZABLE transaction that is a serialization failure (40001)
// instead, as for an UPDATE.
enum class RowWrite { written, changed };

// The terms of a grant.
struct GrantTerms {
  TimestampTz now;
  TimestampTz expires_at;
  Interval* ttl;
  Interval* lock_delay;
  Interval* max_hold;  // NULL: none
  Interval* min_hold;  // NULL: none
};
DLOCK_PLAIN_STRUCT(GrantTerms);

// A grant as src/core decided it: Grant::create inserts the first row of a
// name (row is NULL), Grant::new_token gives a released or expired lease a
// new token, Grant::same_token gives the owner's grant a later expiry and
// keeps its token. Sets *token to the grant's.
RowWrite write_grant(Grant kind, const char* name, const LeaseRow* row,
                     const char* owner, const GrantTerms& terms, int64* token);
// A later expiry and TTL for the grant, counted as a renewal.
RowWrite write_renew(const LeaseRow& row, TimestampTz expires_at,
                     Interval* ttl);
// Marks the grant released at `now`.
RowWrite write_release(const LeaseRow& row, TimestampTz now);
// Deletes a row that no longer occupies its name, when the name's next
// grant is written.
RowWrite delete_row(const LeaseRow& row);

}  // namespace dlock::pg
