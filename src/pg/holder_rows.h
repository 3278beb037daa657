// The holders of shared leases and semaphores: rows of dlock.lease_holders,
// one per grant, keyed by (name, token). Read through the primary key
// without SPI; written with the lease's gate held. A holder's renewal and
// release are lease_row.h's write_renew() and write_release() on its row,
// and its delete_row() removes it.
#pragma once

#include <optional>

#include "../core/duration.h"
#include "../core/holders.h"
#include "../core/lease_rules.h"

#include "boundary.h"
#include "lease_row.h"

namespace dlock::pg {

// A name's holder rows, in token order.
LeaseRows read_holders(const char* name, Seen seen);

// The holder of `name` with `token`, if any (the transaction's snapshot).
std::optional<LeaseRow> read_holder(const char* name, int64 token);

// The same, locked FOR SHARE until the transaction ends (assert_held).
std::optional<LeaseRow> read_holder_for_share(const char* name, int64 token);

// The grant of `name` with `token`: the lease_store row if it has that
// token, else the holder with it. When neither has it, the name's latest
// grant (the largest token), whose token tells a token that came before
// it (a newer grant took the name) from one never granted; nothing if the
// name has no row.
std::optional<LeaseRow> read_grant(const char* name, int64 token);

// The largest token of the name's rows (0 if none): the one messages name
// as the lease's latest.
int64 latest_token(const char* name);

// A new holder's row; draws its token (with the gate held) into *token.
void insert_holder(const char* name, const char* owner, bool shared,
                   int permits, const GrantTerms& terms, int64* token);

}  // namespace dlock::pg
