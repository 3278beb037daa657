// dlock.protect() and dlock.unprotect() install and remove the trigger
// dlock_protect, whose function dlock.fence_guard() refuses a write that
// lowers a row's fence or sets a token dlock never issued.

#include "../core/errors.h"
#include "../core/tokens.h"

#include "args.h"
#include "boundary.h"
#include "fence_target.h"
#include "spi.h"
#include "tokens.h"

namespace dlock::pg {
namespace {

// Runs a DDL statement as the caller, with the caller's privileges.
void run_ddl(const char* sql) {
  spi_connect();
  run_statement(sql, 0, nullptr, nullptr);
  SPI_finish();
}

}  // namespace

// dlock.protect(target regclass, fence_column name) RETURNS void
DLOCK_FUNCTION(dlock_protect) {
  require(fcinfo, 0, "target");
  require(fcinfo, 1, "fence_column");
  const char* column = NameStr(*PG_GETARG_NAME(1));
  // Locked only as a SELECT would, for the column check: CREATE TRIGGER
  // checks the caller's privileges before it takes its own lock.
  Relation rel = open_target(PG_GETARG_OID(0), AccessShareLock);
  fence_column(rel, column);
  const char* sql = psprintf(
      "CREATE OR REPLACE TRIGGER dlock_protect BEFORE INSERT OR UPDATE ON %s"
      " FOR EACH ROW EXECUTE FUNCTION dlock.fence_guard(%s)",
      qualified_name(rel), quote_literal_cstr(column));
  table_close(rel, NoLock);
  run_ddl(sql);
  PG_RETURN_VOID();
}

// dlock.unprotect(target regclass) RETURNS void
DLOCK_FUNCTION(dlock_unprotect) {
  require(fcinfo, 0, "target");
  // Nothing is locked here: DROP TRIGGER checks the caller's privileges
  // before it takes its ACCESS EXCLUSIVE lock, so a role that may not drop
  // the trigger cannot queue behind the table's readers and stall them.
  run_ddl(psprintf("DROP TRIGGER IF EXISTS dlock_protect ON %s",
                   target_name(PG_GETARG_OID(0))));
  PG_RETURN_VOID();
}

// The trigger: BEFORE INSERT OR UPDATE FOR EACH ROW, argument: the fence
// column. Refuses to lower a row's fence (LD001) and a fence dlock never
// issued (LD003); 0 means "not fenced yet".
DLOCK_FUNCTION(dlock_fence_guard) {
  if (!CALLED_AS_TRIGGER(fcinfo)) {
    throw_error(sqlstate::feature_not_supported,
                "dlock.fence_guard() must be called as a trigger");
  }
  TriggerData* trigger = reinterpret_cast<TriggerData*>(fcinfo->context);
  TriggerEvent event = trigger->tg_event;
  if (!TRIGGER_FIRED_BEFORE(event) || !TRIGGER_FIRED_FOR_ROW(event) ||
      TRIGGER_FIRED_BY_DELETE(event) || trigger->tg_trigger->tgnargs != 1) {
    throw_error(sqlstate::feature_not_supported,
                "dlock.fence_guard() must run BEFORE INSERT OR UPDATE FOR "
                "EACH ROW with the fence column as its argument");
  }
  Relation rel = trigger->tg_relation;
  // Checked at every write: the column may have been altered since.
  AttrNumber attnum = fence_column(rel, trigger->tg_trigger->tgargs[0]);
  TupleDesc desc = RelationGetDescr(rel);
  bool is_update = TRIGGER_FIRED_BY_UPDATE(event);
  HeapTuple row = is_update ? trigger->tg_newtuple : trigger->tg_trigtuple;
  bool new_null;
  int64 fence = DatumGetInt64(heap_getattr(row, attnum, desc, &new_null));
  bool old_null = true;
  int64 old_fence = 0;
  if (is_update) {
    old_fence = DatumGetInt64(
        heap_getattr(trigger->tg_trigtuple, attnum, desc, &old_null));
  }
  if (!old_null && (new_null || fence < old_fence)) {
    throw_error(
        sqlstate::stale_token,
        new_null ? psprintf("fencing token NULL is stale for a row "
                            "of %s",
                            RelationGetRelationName(rel))
                 : psprintf("fencing token %lld is stale for a row "
                            "of %s",
                            static_cast<long long>(fence),
                            RelationGetRelationName(rel)),
        psprintf("The row's fence is %lld.", static_cast<long long>(old_fence)),
        "Stop writing: a newer holder has written this row.");
  }
  // 0 marks a row no holder has written yet (e.g. DEFAULT 0).
  if (!new_null && fence != 0 && (old_null || fence != old_fence)) {
    dlock::check_token_issued(fence, last_issued_token());
  }
  return PointerGetDatum(row);
}

}  // namespace dlock::pg
