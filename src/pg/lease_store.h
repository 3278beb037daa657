// Access to dlock's tables: a direct index read of one lease, the per-lease
// gate, direct updates of a lease's row, and saved SPI plans for the rest
// (a name's first grant, administration, fences, tokens' epochs).
// Plain frames only (see boundary.h): everything here may ereport.
#pragma once

#include <optional>

#include "../core/lease_rules.h"

#include "pg_glue.h"

namespace dlock {

// A lease row as last committed (or as written earlier by this
// transaction). owner is palloc'd in the current memory context.
struct StoredLease {
  int64 token;
  const char* owner;
  TimestampTz acquired_at;
  TimestampTz expires_at;
  Interval* ttl;
  bool released;
  Micros lock_delay;  // 0: none
  Micros max_hold;    // 0: none
  const char* forced_by;     // who force-released it, or NULL
  const char* force_reason;  // and why
  const char* acquired_by;   // the role that acquired it
  int64 renew_count;
  HeapTuple tuple;  // the row version read (a copy), for the write_* below;
                    // NULL where not read by read_lease()
};

// Reads the lease through the primary key with the transaction's snapshot
// (a fresh one in READ COMMITTED): no SPI, no lock on the row, no WAL.
std::optional<StoredLease> read_lease(const char* name);

// The lease's gate: a lock in dlock's own advisory key space (field 4 = 3),
// on a 64-bit hash of the name (hashtextextended(name, 0) in SQL), held to
// the end of the transaction by every writer of the lease's row. Writers of
// one lease are serialised by it, so two transactions can never both
// create or take the same lease and no write waits for a row lock.
// try_gate() does not wait: a gate held elsewhere means a write of this
// lease is in flight. wait_gate() waits, like any lock.
LOCKTAG gate_tag(const char* name);
// The same key in dlock's "waiting" key space (field 4 = 4): held shared by
// sessions waiting in dlock.acquire() for the lease.
LOCKTAG waiting_tag(const char* name);
bool try_gate(const LOCKTAG& gate);
void release_gate(const LOCKTAG& gate);
void wait_gate(const char* name);

// A connection to SPI running as the owner of dlock's tables, so callers
// need no privileges on them. On error, transaction or subtransaction abort
// restores the user and closes SPI; close_writer() is for the success path.
struct Writer {
  MemoryContext caller_cxt;  // the SQL function's memory context
  Oid saved_user;
  int saved_sec_context;
};
Writer open_writer();
void close_writer(const Writer& w);

// Writes of a lease row that read_lease() returned, with the lease's gate
// held, as compare-and-set on that row version: each returns
// RowWrite::changed, writing nothing, if another transaction wrote the row
// after it was read (read it again and decide again). In a REPEATABLE READ
// or SERIALIZABLE transaction that is a serialization failure (40001)
// instead, as for an UPDATE. No statement is planned or run: a lease's
// grants, renewals and releases are heap-only updates of its row.
enum class RowWrite { written, changed };

// A grant: `create` inserts the first row of a name (row is NULL), `take`
// gives a released or expired lease a new token, `extend` gives the owner's
// grant a later expiry and keeps its token. Sets *token to the grant's.
enum class GrantWrite { create, take, extend };
struct GrantTerms {
  TimestampTz now;
  TimestampTz expires_at;
  Interval* ttl;
  Interval* lock_delay;
  Interval* max_hold;  // NULL: none
};
RowWrite write_grant(GrantWrite kind, const char* name, const StoredLease* row,
                     const char* owner, const GrantTerms& terms, int64* token);
// A later expiry and TTL for the grant, counted as a renewal.
RowWrite write_renew(const StoredLease& row, TimestampTz expires_at,
                     Interval* ttl);
// Marks the grant released at `now`.
RowWrite write_release(const StoredLease& row, TimestampTz now);
// Force-release: marks the lease released by `by` for `reason`, whoever
// holds it. Returns 1 and the grant it ended in *ended, or 0 if it was
// already released or never existed.
uint64 write_force_release(const char* name, TimestampTz now, const char* by,
                           const char* reason, StoredLease* ended);
// Names, tokens and acquiring roles of the leases `owner` holds now.
// Returns the count; fills arrays palloc'd in `into`.
int held_by_owner(const char* owner, TimestampTz now, MemoryContext into,
                  char*** names, int64** tokens, char*** roles);
// Up to `limit` names of leases released or expired (past their lock-delay)
// before `before`.
int sweepable(TimestampTz before, int limit, char*** names);
// Deletes the lease row if it is still sweepable; returns rows deleted.
uint64 delete_swept(const char* name, TimestampTz before);

// The next fencing token: nextval of dlock.token_seq after checking the
// sequence is still safe (55000) and, on a new history (cluster or WAL
// timeline), moving it to a new epoch first (see src/core/fencing.h).
int64 next_token();

// The largest token issued so far, or nothing if none was.
std::optional<int64> last_issued_token();

// The lease row, locked FOR SHARE until the transaction ends. Runs inside a
// Writer; owner lives in SPI's memory.
std::optional<StoredLease> read_lease_for_share(const char* name);

// dlock.fences: records token for resource if it is at least the highest
// accepted; returns false (nothing written, row locked) otherwise, with
// *highest set to the resource's highest token. Runs inside a Writer.
bool write_fence(const char* resource, int64 token, int64* highest);

// Remembers which name an advisory key (dlock.key) was taken for, so the
// views can show it. Skipped in read-only transactions and on standbys.
// Runs inside a Writer.
void remember_advisory_name(int64 key, const char* name);

}  // namespace dlock
