// dlock's own relations, looked up by name once per backend and forgotten
// on any invalidation that may concern them (DROP and CREATE EXTENSION, a
// renamed schema), so that a lease call costs no catalog lookup.
#pragma once

#include "boundary.h"

namespace dlock::pg {

enum class DlockRelation {
  lease_store,
  lease_store_pkey,
  token_seq,
  token_epoch,
  lease_holders,
  lease_holders_pkey,
};

// The relation's OID; raises an error if dlock's schema lacks it (55000,
// as for SQL objects older than the library, for lease_holders: 0.6.0's
// objects lack it).
Oid dlock_relation(DlockRelation which);

// 55000 unless the SQL objects are this library's (see
// lease_store_is_current(), and lease_holders exists), for the statements
// that run SQL on them.
void require_current_sql_objects();

// 55000 for SQL objects older than this library: a new build was
// installed and ALTER EXTENSION dlock UPDATE has not run yet.
[[noreturn]] void raise_sql_objects_outdated();

// Counts the times the cached OIDs were forgotten: a cache of anything
// read from dlock's tables (such as the token history) is stale once this
// has moved on.
uint64 relations_generation();

}  // namespace dlock::pg
