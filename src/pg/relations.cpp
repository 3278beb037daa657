#include <optional>

#include "../core/duration.h"
#include "../core/errors.h"
#include "../core/holders.h"
#include "../core/lease_rules.h"

#include "relations.h"
#include "boundary.h"
#include "lease_row.h"

namespace dlock::pg {

namespace {

constexpr int kRelationCount = 6;
const char* const kRelationNames[kRelationCount] = {
    "lease_store", "lease_store_pkey", "token_seq",
    "token_epoch", "lease_holders",    "lease_holders_pkey"};
Oid relation_oids[kRelationCount];
uint64 generation = 1;
uint64 objects_checked = 0;  // the generation they were found current in
bool callbacks_registered = false;

void forget_relations() {
  for (Oid& oid : relation_oids) oid = InvalidOid;
  ++generation;
}

extern "C" {
static void on_relcache_invalidation(Datum, Oid relid) {
  for (Oid oid : relation_oids) {
    if (!OidIsValid(relid) || relid == oid) {
      forget_relations();
      return;
    }
  }
}

static void on_namespace_invalidation(Datum, int, uint32) {
  forget_relations();
}
}  // extern "C"

}  // namespace

Oid dlock_relation(DlockRelation which) {
  if (!callbacks_registered) {
    CacheRegisterRelcacheCallback(on_relcache_invalidation, 0);
    CacheRegisterSyscacheCallback(NAMESPACEOID, on_namespace_invalidation, 0);
    callbacks_registered = true;
  }
  int at = static_cast<int>(which);
  if (!OidIsValid(relation_oids[at])) {
    const char* relname = kRelationNames[at];
    Oid relid = get_relname_relid(relname, get_namespace_oid("dlock", false));
    if (!OidIsValid(relid) && which >= DlockRelation::lease_holders) {
      raise_sql_objects_outdated();
    }
    if (!OidIsValid(relid)) {
      elog(ERROR, "dlock: relation dlock.%s is missing", relname);
    }
    relation_oids[at] = relid;
  }
  return relation_oids[at];
}

uint64 relations_generation() { return generation; }

void require_current_sql_objects() {
  // Also registers the invalidation callbacks.
  Oid relid = dlock_relation(DlockRelation::lease_store);
  if (objects_checked == generation) return;
  Relation rel = table_open(relid, AccessShareLock);
  bool current = lease_store_is_current(RelationGetDescr(rel));
  table_close(rel, AccessShareLock);
  if (!current) raise_sql_objects_outdated();
  (void)dlock_relation(DlockRelation::lease_holders);
  objects_checked = generation;
}

void raise_sql_objects_outdated() {
  throw_error(dlock::sqlstate::object_not_in_prerequisite_state,
              "dlock's SQL objects are older than its library", nullptr,
              "Run ALTER EXTENSION dlock UPDATE.");
}

}  // namespace dlock::pg
