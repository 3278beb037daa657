// The holders of shared leases and semaphores: rows of dlock.lease_holders,
// one per grant, keyed by (name, token). Read through the primary key
// without SPI; written with the lease's gate held. A holder's renewal and
// release are lease_row.h's write_renew() and write_release() on its row.
#pragma once

#include <optional>

#include "boundary.h"
#include "lease_row.h"
#include "pg_headers.h"

namespace dlock::pg {

// A name's holder rows, in token order.
struct HolderRows {
  StoredLease* rows;
  int count;
};
DLOCK_PLAIN_STRUCT(HolderRows);

// Which rows a read sees: the transaction's snapshot (a fresh one in READ
// COMMITTED), or every committed row, whatever the isolation level. A
// decision taken with the lease's gate held reads the latest: a grant
// must not miss a holder because its snapshot is older.
enum class Seen { snapshot, latest };

HolderRows read_holders(const char* name, Seen seen);

// The holder of `name` with `token`, if any (the transaction's snapshot).
std::optional<StoredLease> read_holder(const char* name, int64 token);

// The same, locked FOR SHARE until the transaction ends (assert_held).
std::optional<StoredLease> read_holder_for_share(const char* name, int64 token);

// The grant of `name` with `token`: the lease_store row if it has that
// token, else the holder with it; when neither, the lease_store row (or
// nothing), which messages name as the lease's latest grant.
std::optional<StoredLease> read_grant(const char* name, int64 token);

// A new holder's row; draws its token (with the gate held) into *token.
void insert_holder(const char* name, const char* owner, bool shared,
                   int permits, const GrantTerms& terms, int64* token);

// Deletes a holder row that no longer occupies its name.
void delete_holder(const StoredLease& holder);

}  // namespace dlock::pg
