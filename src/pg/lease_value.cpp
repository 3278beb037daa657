#include "../core/duration.h"

#include "lease_value.h"
#include "intervals.h"

namespace dlock::pg {

Datum lease_value(FunctionCallInfo fcinfo, const char* name, const char* owner,
                  int64 token, TimestampTz acquired_at,
                  TimestampTz expires_at) {
  // The row type is looked up once per call site (fn_extra lives as long as
  // the calling query's FmgrInfo).
  FmgrInfo* flinfo = fcinfo->flinfo;
  if (flinfo->fn_extra == nullptr) {
    TupleDesc found;
    if (get_call_result_type(fcinfo, nullptr, &found) != TYPEFUNC_COMPOSITE) {
      elog(ERROR, "dlock: function must return dlock.lease");
    }
    MemoryContext old = MemoryContextSwitchTo(flinfo->fn_mcxt);
    flinfo->fn_extra = BlessTupleDesc(CreateTupleDescCopy(found));
    MemoryContextSwitchTo(old);
  }
  TupleDesc desc = static_cast<TupleDesc>(flinfo->fn_extra);
  Micros left = expires_at - GetCurrentTimestamp();
  Datum values[6] = {
      CStringGetTextDatum(name),
      Int64GetDatum(token),
      CStringGetTextDatum(owner),
      TimestampTzGetDatum(acquired_at),
      TimestampTzGetDatum(expires_at),
      IntervalPGetDatum(exact_interval(left > 0 ? left : 0)),
  };
  bool nulls[6] = {false, false, false, false, false, false};
  return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

}  // namespace dlock::pg
