#include "relations.h"

namespace dlock::pg {

namespace {

constexpr int kRelationCount = 3;
const char* const kRelationNames[kRelationCount] = {
    "lease_store", "lease_store_pkey", "token_seq"};
Oid relation_oids[kRelationCount];
uint64 generation = 1;
bool callbacks_registered = false;

void forget_relations() {
  for (Oid& oid : relation_oids) oid = InvalidOid;
  ++generation;
}

extern "C" void on_relcache_invalidation(Datum, Oid relid) {
  for (Oid oid : relation_oids) {
    if (!OidIsValid(relid) || relid == oid) {
      forget_relations();
      return;
    }
  }
}

extern "C" void on_namespace_invalidation(Datum, int, uint32) {
  forget_relations();
}

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
    if (!OidIsValid(relid)) {
      elog(ERROR, "dlock: relation dlock.%s is missing", relname);
    }
    relation_oids[at] = relid;
  }
  return relation_oids[at];
}

uint64 relations_generation() { return generation; }

}  // namespace dlock::pg
