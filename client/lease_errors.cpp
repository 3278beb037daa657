#include "lease_errors.h"

namespace dlock::client {

void rethrow_as_lease_error(const pgc::PgError& e) {
  const std::string& s = e.sqlstate();
  if (s == "LD002") throw LeaseNotHeld(s, e.what(), e.detail());
  if (s == "LD001") throw StaleToken(s, e.what(), e.detail());
  if (s == "LD003") throw TokenNeverIssued(s, e.what(), e.detail());
  if (s == "42501") throw NotPermitted(s, e.what(), e.detail());
  if (s == "22004" || s == "22023") {
    throw InvalidArgument(s, e.what(), e.detail());
  }
  if (is_connection_failure(s)) throw ConnectionLost(s, e.what(), e.detail());
  throw ServerError(s, e.what(), e.detail());
}

void raise_lease_error(const pgc::Result& failed) {
  rethrow_as_lease_error(
      pgc::PgError(failed.sqlstate(), failed.message(), failed.detail()));
}

bool ends_grant(const std::string& sqlstate) {
  return sqlstate == "LD001" || sqlstate == "LD002" || sqlstate == "LD003" ||
         sqlstate == "42501";
}

bool is_connection_failure(const std::string& sqlstate) {
  // "": libpq's own failure (no answer from the server); class 08:
  // connection exceptions; 57P01-57P03: the server is shutting down or
  // starting up.
  return sqlstate.empty() || sqlstate.rfind("08", 0) == 0 ||
         sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03";
}

}  // namespace dlock::client
