// SQL-callable all-or-nothing multi-leases: try_acquire_all and
// acquire_all. Every name is taken in one transaction, in the names'
// byte order, so that nobody sees a part of them held and two callers
// never wait for each other in a cycle.

#include "../core/arguments.h"
#include "../core/deadline.h"
#include "../core/duration.h"
#include "../core/errors.h"
#include "../core/holders.h"
#include "../core/lease_rules.h"
#include "../core/lease_stats.h"

#include "args.h"
#include "boundary.h"
#include "gate.h"
#include "grant.h"
#include "intervals.h"
#include "lease_queue.h"
#include "lease_row.h"
#include "lease_value.h"
#include "settings.h"
#include "stats.h"

namespace dlock::pg {
namespace {

struct Names {
  const char** names;
  int count;
};
DLOCK_PLAIN_STRUCT(Names);

int compare_names(const void* a, const void* b) {
  return strcmp(*static_cast<const char* const*>(a),
                *static_cast<const char* const*>(b));
}

// The names argument, checked and sorted: 22004 for a NULL array or
// element, 22023 for an empty or multi-dimensional array, one of more than
// dlock.max_names elements, a bad name or a name given twice.
Names sorted_names(FunctionCallInfo fcinfo) {
  require(fcinfo, 0, "names");
  ArrayType* array = PG_GETARG_ARRAYTYPE_P(0);
  if (ARR_NDIM(array) > 1) {
    throw_error(sqlstate::invalid_parameter_value,
                "names must be a one-dimensional array",
                psprintf("It has %d dimensions.", ARR_NDIM(array)));
  }
  // Before anything is taken: each name holds a lock until commit.
  int elements_given = ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
  if (elements_given > max_names) {
    throw_error(sqlstate::invalid_parameter_value,
                psprintf("names has %d elements, more than dlock.max_names",
                         elements_given),
                psprintf("dlock.max_names is %d.", max_names),
                "Take the leases in several transactions, or ask a "
                "superuser to raise dlock.max_names.");
  }
  Datum* elements;
  bool* nulls;
  int count;
  deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elements, &nulls,
                    &count);
  if (count == 0) {
    throw_error(sqlstate::invalid_parameter_value, "names must not be empty");
  }
  Names sorted{static_cast<const char**>(palloc(sizeof(char*) * count)), count};
  for (int i = 0; i < count; ++i) {
    if (nulls[i]) {
      throw_error(sqlstate::null_value_not_allowed,
                  "names must not contain NULL",
                  psprintf("Element %d is NULL.", i + 1));
    }
    sorted.names[i] = TextDatumGetCString(elements[i]);
    dlock::check_name(sorted.names[i]);
  }
  qsort(sorted.names, count, sizeof(char*), compare_names);
  for (int i = 1; i < count; ++i) {
    if (strcmp(sorted.names[i - 1], sorted.names[i]) == 0) {
      throw_error(
          sqlstate::invalid_parameter_value,
          psprintf("lease \"%s\" is named twice in names", sorted.names[i]),
          nullptr, "Name each lease once.");
    }
  }
  return sorted;
}

// The grants as the function's rows (none when count is 0).
Datum return_grants(FunctionCallInfo fcinfo, const Names& names,
                    const LeaseRequest& terms, const Granted* grants,
                    int count) {
  InitMaterializedSRF(fcinfo, 0);
  ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  for (int i = 0; i < count; ++i) {
    Datum lease =
        lease_value(fcinfo, names.names[i], terms.owner, grants[i].token,
                    grants[i].acquired_at, grants[i].expires_at);
    HeapTupleHeader header = DatumGetHeapTupleHeader(lease);
    HeapTupleData tuple;
    tuple.t_len = HeapTupleHeaderGetDatumLength(header);
    ItemPointerSetInvalid(&tuple.t_self);
    tuple.t_tableOid = InvalidOid;
    tuple.t_data = header;
    tuplestore_puttuple(rsinfo->setResult, &tuple);
  }
  return static_cast<Datum>(0);
}

void give_back_gates(const Names& names, int taken) {
  for (int i = 0; i < taken; ++i) release_gate(gate_tag(names.names[i]));
}

// try_acquire_all's answer when names.names[busy] is busy: no row, and a
// busy answer counted for that name.
Datum none_granted(FunctionCallInfo fcinfo, const Names& names,
                   const LeaseRequest& terms, int busy) {
  count_event(names.names[busy], dlock::LeaseEvent::busy);
  return return_grants(fcinfo, names, terms, nullptr, 0);
}

}  // namespace

// dlock.try_acquire_all(names text[], ttl interval, owner text,
// lock_delay interval, max_hold interval, min_hold interval)
// RETURNS SETOF dlock.lease: all granted, or no row and nothing written.
// A first look without locks; then every gate; then, with no write of
// any of the leases in flight, a look at each as committed now; only
// when all are free, the writes (which cannot find one busy then: with
// the gates held, time only frees a lease).
DLOCK_FUNCTION(dlock_try_acquire_all) {
  Names names = sorted_names(fcinfo);
  LeaseRequest terms = lease_terms(fcinfo, 2);
  PreventCommandIfReadOnly("dlock.try_acquire_all()");
  Micros free_in;
  bool* retry = static_cast<bool*>(palloc(sizeof(bool) * names.count));
  for (int i = 0; i < names.count; ++i) {
    GrantPreview preview =
        preview_grant(lease_request_for(terms, names.names[i]), &free_in);
    if (preview == GrantPreview::busy) {
      return none_granted(fcinfo, names, terms, i);
    }
    retry[i] = preview == GrantPreview::same_token;
  }
  for (int i = 0; i < names.count; ++i) {
    // The owner's retry of a held grant never waits behind the queue.
    if ((!retry[i] && others_queued(names.names[i])) ||
        !try_gate(gate_tag(names.names[i]))) {
      give_back_gates(names, i);
      return none_granted(fcinfo, names, terms, i);
    }
  }
  for (int i = 0; i < names.count; ++i) {
    if (preview_grant(lease_request_for(terms, names.names[i]), &free_in) ==
        GrantPreview::busy) {
      give_back_gates(names, names.count);
      return none_granted(fcinfo, names, terms, i);
    }
  }
  Granted* grants =
      static_cast<Granted*>(palloc(sizeof(Granted) * names.count));
  for (int i = 0; i < names.count; ++i) {
    if (grant_holding_gate(lease_request_for(terms, names.names[i]), &grants[i],
                           &free_in) != Attempt::granted) {
      // Only a REPEATABLE READ snapshot older than the lease can get here.
      raise_serialization_failure();
    }
  }
  return return_grants(fcinfo, names, terms, grants, names.count);
}

// dlock.acquire_all(names text[], ttl interval, timeout interval, owner
// text, ...) RETURNS SETOF dlock.lease: waits for each lease in turn, as
// dlock.acquire() does, until one deadline. The grants made so far are
// uncommitted while it waits for the next, so nobody sees them held; on
// timeout the error rolls them back.
DLOCK_FUNCTION(dlock_acquire_all) {
  Names names = sorted_names(fcinfo);
  LeaseRequest terms = lease_terms(fcinfo, 3);
  Micros timeout = dlock::check_timeout(
      interval_fields(required_interval(fcinfo, 2, "timeout")));
  PreventCommandIfReadOnly("dlock.acquire_all()");
  refuse_waits_in_snapshot("dlock.acquire_all()", "dlock.try_acquire_all()");
  Deadline deadline = Deadline::after(dlock::monotonic_now(), timeout);
  Granted* grants =
      static_cast<Granted*>(palloc(sizeof(Granted) * names.count));
  for (int i = 0; i < names.count; ++i) {
    if (!acquire_until(lease_request_for(terms, names.names[i]), deadline,
                       &grants[i])) {
      raise_timed_out(names.names[i], timeout);
    }
  }
  return return_grants(fcinfo, names, terms, grants, names.count);
}

}  // namespace dlock::pg
