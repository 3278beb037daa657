#include <optional>

#include "../core/tokens.h"

#include "tokens.h"
#include "relations.h"
#include "spi.h"

namespace dlock::pg {

namespace {

// The history (cluster, WAL timeline) this backend last saw tokens issued
// on, valid while relations_generation() stays at checked_generation: after
// DROP and CREATE EXTENSION, dlock.token_epoch is a new table. A backend
// serves one database, so the database needs no entry.
uint64 checked_generation = 0;
uint64 checked_system_identifier = 0;
TimeLineID checked_timeline = 0;

// The history tokens were last issued on.
SavedPlan read_epoch = {
    "SELECT system_identifier, timeline, database FROM dlock.token_epoch",
    0,
    {},
    nullptr};
// Tokens are now issued on this history.
SavedPlan write_epoch = {
    "INSERT INTO dlock.token_epoch AS e"
    "       (system_identifier, timeline, database)"
    " VALUES ($1, $2, $3)"
    " ON CONFLICT (single_row) DO UPDATE"
    "   SET system_identifier = $1, timeline = $2, database = $3",
    3,
    {INT8OID, INT4OID, OIDOID},
    nullptr};

bool recorded_history_is(SavedPlan& plan, uint64 sysid, TimeLineID tli) {
  if (run_plan(plan, nullptr, "") != 1) return false;
  bool isnull;
  return static_cast<uint64>(DatumGetInt64(result_value(0, 1, &isnull))) ==
             sysid &&
         static_cast<TimeLineID>(DatumGetInt32(result_value(0, 2, &isnull))) ==
             tli &&
         DatumGetObjectId(result_value(0, 3, &isnull)) == MyDatabaseId;
}

// Moves the sequence to a new epoch when tokens are about to be issued on
// a history (cluster, timeline, database: a CREATE DATABASE ... TEMPLATE
// copy must not repeat its original's tokens) other than the one recorded
// in dlock.token_epoch.
void enter_epoch(Oid seq) {
  uint64 sysid = GetSystemIdentifier();
  TimeLineID tli = GetWALInsertionTimeLine();
  if (checked_generation == relations_generation() &&
      sysid == checked_system_identifier && tli == checked_timeline) {
    return;
  }
  OwnerSpi spi = owner_spi_connect();
  // Read first without locking, so that a transaction that checked the
  // history does not hold up other sessions' first grants (a long acquire()
  // wait included). To move the sequence, one transaction at a time takes
  // the table (a restored database has no row to lock) to its end, and
  // reads again: another may have moved it meanwhile.
  bool current = recorded_history_is(read_epoch, sysid, tli);
  if (!current) {
    LockRelationOid(dlock_relation(DlockRelation::token_epoch), ExclusiveLock);
    current = recorded_history_is(read_epoch, sysid, tli);
  }
  if (!current) {
    std::optional<int64> last = last_issued_token();
    if (last) {
      DirectFunctionCall2(setval_oid, ObjectIdGetDatum(seq),
                          Int64GetDatum(dlock::epoch_floor(*last)));
    }
    Datum args[3] = {Int64GetDatum(static_cast<int64>(sysid)),
                     Int32GetDatum(static_cast<int32>(tli)),
                     ObjectIdGetDatum(MyDatabaseId)};
    run_plan(write_epoch, args, "   ");
  }
  owner_spi_finish(spi);
  checked_generation = relations_generation();
  checked_system_identifier = sysid;
  checked_timeline = tli;
}

}  // namespace

int64 next_token() {
  Oid seq = dlock_relation(DlockRelation::token_seq);
  HeapTuple tup = SearchSysCache1(SEQRELID, ObjectIdGetDatum(seq));
  if (!HeapTupleIsValid(tup)) elog(ERROR, "dlock: token_seq is not a sequence");
  Form_pg_sequence form = reinterpret_cast<Form_pg_sequence>(GETSTRUCT(tup));
  bool cycles = form->seqcycle;
  int64 cache = form->seqcache;
  int64 increment = form->seqincrement;
  ReleaseSysCache(tup);
  dlock::check_token_sequence(
      cycles, cache, increment,
      get_rel_persistence(seq) == RELPERSISTENCE_PERMANENT);
  enter_epoch(seq);
  return nextval_internal(seq, false);
}

std::optional<int64> last_issued_token() {
  LOCAL_FCINFO(call, 1);
  InitFunctionCallInfoData(*call, nullptr, 1, InvalidOid, nullptr, nullptr);
  call->args[0].value =
      ObjectIdGetDatum(dlock_relation(DlockRelation::token_seq));
  call->args[0].isnull = false;
  Datum last = pg_sequence_last_value(call);
  if (call->isnull) return std::nullopt;
  return DatumGetInt64(last);
}

}  // namespace dlock::pg
