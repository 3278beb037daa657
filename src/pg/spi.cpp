#include "spi.h"
#include "relations.h"

namespace dlock::pg {

OwnerSpi owner_spi_connect() {
  OwnerSpi spi;
  spi.caller_cxt = CurrentMemoryContext;
  GetUserIdAndSecContext(&spi.saved_user, &spi.saved_sec_context);
  HeapTuple tup = SearchSysCache1(
      RELOID, ObjectIdGetDatum(dlock_relation(DlockRelation::lease_store)));
  if (!HeapTupleIsValid(tup)) elog(ERROR, "dlock: lease_store is missing");
  Oid table_owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup))->relowner;
  ReleaseSysCache(tup);
  spi_connect();
  SetUserIdAndSecContext(table_owner,
                         spi.saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
  return spi;
}

void owner_spi_finish(const OwnerSpi& spi) {
  SetUserIdAndSecContext(spi.saved_user, spi.saved_sec_context);
  SPI_finish();
}

void spi_connect() {
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "dlock: SPI_connect failed");
}

uint64 run_statement(const char* sql, int nargs, Oid* types, Datum* args) {
  int rc = SPI_execute_with_args(sql, nargs, types, args, nullptr, false, 0);
  if (rc < 0) {
    elog(ERROR, "dlock: statement failed: %s", SPI_result_code_string(rc));
  }
  return SPI_processed;
}

uint64 run_plan(SavedPlan& plan, const Datum* args, const char* nulls) {
  if (plan.plan == nullptr) {
    SPIPlanPtr p = SPI_prepare(plan.sql, plan.nargs, plan.types);
    if (p == nullptr) {
      elog(ERROR, "dlock: SPI_prepare failed: %s",
           SPI_result_code_string(SPI_result));
    }
    SPI_keepplan(p);
    plan.plan = p;
  }
  int rc =
      SPI_execute_plan(plan.plan, const_cast<Datum*>(args), nulls, false, 0);
  if (rc < 0) {
    elog(ERROR, "dlock: SPI_execute_plan failed: %s",
         SPI_result_code_string(rc));
  }
  return SPI_processed;
}

Datum result_value(uint64 row, int column, bool* isnull) {
  return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, column,
                       isnull);
}

}  // namespace dlock::pg
