#include <dlock/lease_errors.h>

// src/core's table of every SQLSTATE dlock raises: the codes' one home.
#include "errors.h"

namespace dlock::client {

namespace {

template <typename T>
[[noreturn]] void throw_type(const pq::Error& e) {
  throw T(e.sqlstate(), e.what(), e.detail());
}

// Which C++ type each of dlock's SQLSTATEs becomes, and whether it ends a
// grant when it answers a renewal. A code missing here is a ServerError.
struct LeaseErrorRule {
  const char* sqlstate;
  void (*raise)(const pq::Error&);
  bool ends_grant;
};

constexpr LeaseErrorRule kLeaseErrorRules[] = {
    {sqlstate::lease_not_held, throw_type<LeaseNotHeld>, true},
    {sqlstate::stale_token, throw_type<StaleToken>, true},
    {sqlstate::token_never_issued, throw_type<TokenNeverIssued>, true},
    {sqlstate::insufficient_privilege, throw_type<NotPermitted>, true},
    {sqlstate::lease_mode_conflict, throw_type<LeaseModeConflict>, false},
    {sqlstate::null_value_not_allowed, throw_type<InvalidArgument>, false},
    {sqlstate::invalid_parameter_value, throw_type<InvalidArgument>, false},
};

const LeaseErrorRule* rule_for(const std::string& sqlstate) {
  for (const LeaseErrorRule& rule : kLeaseErrorRules) {
    if (sqlstate == rule.sqlstate) return &rule;
  }
  return nullptr;
}

}  // namespace

void rethrow_as_lease_error(const pq::Error& e) {
  if (const LeaseErrorRule* rule = rule_for(e.sqlstate())) rule->raise(e);
  if (is_connection_failure(e.sqlstate())) throw_type<ConnectionLost>(e);
  throw_type<ServerError>(e);
}

void raise_lease_error(const pq::Result& failed) {
  rethrow_as_lease_error(
      pq::Error(failed.sqlstate(), failed.message(), failed.detail()));
}

bool ends_grant(const std::string& sqlstate) {
  const LeaseErrorRule* rule = rule_for(sqlstate);
  return rule != nullptr && rule->ends_grant;
}

bool is_connection_failure(const std::string& sqlstate) {
  // "": libpq's own failure (no answer from the server); class 08:
  // connection exceptions; 57P01-57P03: the server is shutting down or
  // starting up.
  return sqlstate.empty() || sqlstate.rfind("08", 0) == 0 ||
         sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03";
}

}  // namespace dlock::client
