// The one home for the differences between PostgreSQL majors: every
// PG_VERSION_NUM test in src/ is here, at the major that made the change,
// with the release (and commit) that made it. The glue calls these names
// instead of PostgreSQL's; boundary.h includes this header right after
// pg_headers.h, whose PostgreSQL headers it assumes.
//
// Built and tested on 15 (the supported major) and 18 (the port's first
// step, scripts/build-postgres.sh); 16 and 17 follow from the same guards
// but are not built by any test.
#pragma once

namespace dlock::pg::compat {

// LockHeldByMe gained an orstronger argument in PostgreSQL 17
// (src/include/storage/lock.h; the commit is not yet pinned down here).
// dlock asks about the exact mode, as before.
inline bool lock_held_by_me(const LOCKTAG* tag, LOCKMODE mode) {
#if PG_VERSION_NUM >= 170000
  return LockHeldByMe(tag, mode, false);
#else
  return LockHeldByMe(tag, mode);
#endif
}

// The backend a virtual transaction id names, or NULL. PostgreSQL 17
// replaced BackendIds with 0-based ProcNumbers (commit 024c521117, "Replace
// BackendIds with 0-based ProcNumbers"): VirtualTransactionId.backendId
// became procNumber and BackendIdGetProc became ProcNumberGetProc.
inline PGPROC* vxid_proc(const VirtualTransactionId& vxid) {
#if PG_VERSION_NUM >= 170000
  return ProcNumberGetProc(vxid.procNumber);
#else
  return BackendIdGetProc(vxid.backendId);
#endif
}

// Which index entries a heap_update needs. PostgreSQL 16 lets an update stay
// heap-only while summarizing (BRIN) indexes still need entries (commit
// 19d8e2308b, "Ignore BRIN indexes when checking for HOT updates"):
// heap_update reports it in a TU_UpdateIndexes and ExecInsertIndexTuples
// takes onlySummarizing. Before 16, a heap-only tuple needs none and any
// other tuple needs all.
enum class IndexUpdate { kNone, kAll, kSummarizing };

inline TM_Result heap_update(Relation rel, ItemPointer otid, HeapTuple newtup,
                             CommandId cid, TM_FailureData* failure,
                             LockTupleMode* mode, IndexUpdate* indexes) {
#if PG_VERSION_NUM >= 160000
  TU_UpdateIndexes update = TU_None;
  TM_Result result = ::heap_update(rel, otid, newtup, cid, InvalidSnapshot,
                                   true, failure, mode, &update);
  *indexes = update == TU_All           ? IndexUpdate::kAll
             : update == TU_Summarizing ? IndexUpdate::kSummarizing
                                        : IndexUpdate::kNone;
#else
  TM_Result result = ::heap_update(rel, otid, newtup, cid, InvalidSnapshot,
                                   true, failure, mode);
  *indexes = result == TM_Ok && !HeapTupleIsHeapOnly(newtup)
                 ? IndexUpdate::kAll
                 : IndexUpdate::kNone;
#endif
  return result;
}

// ExecInsertIndexTuples for an update (the bottom-up deletion hint), no
// speculative insertion; only_summarizing needs PostgreSQL 16 (above).
inline List* insert_index_tuples(ResultRelInfo* target, TupleTableSlot* slot,
                                 EState* estate, bool only_summarizing) {
#if PG_VERSION_NUM >= 160000
  return ExecInsertIndexTuples(target, slot, estate, true, false, nullptr, NIL,
                               only_summarizing);
#else
  return ExecInsertIndexTuples(target, slot, estate, true, false, nullptr, NIL);
#endif
}

}  // namespace dlock::pg::compat
