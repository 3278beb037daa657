// The errors dlock's lease functions raise, as C++ types. A busy lease is
// not among them: try_acquire and acquire return std::nullopt for it.
// Every type derives from dlock::pq::Error, so sqlstate(), what() (the
// server's message) and detail() stay at hand.
#pragma once

#include <string>

#include <dlock/pq.h>

namespace dlock::client {

// LD002: the lease is not held with this token (expired, released, taken
// by a newer token, force-released; DETAIL says which).
struct LeaseNotHeld : pq::Error {
  using Error::Error;
};
// LD001: a newer token holds the lease or has written.
struct StaleToken : pq::Error {
  using Error::Error;
};
// LD003: dlock never issued this token.
struct TokenNeverIssued : pq::Error {
  using Error::Error;
};
// 42501: the lease belongs to another role, or EXECUTE is missing.
struct NotPermitted : pq::Error {
  using Error::Error;
};
// LD004: the owner holds the lease in the other mode (shared or exclusive)
// than the one it asks for.
struct LeaseModeConflict : pq::Error {
  using Error::Error;
};
// 22004, 22023: a bad argument (name, owner, ttl, ...).
struct InvalidArgument : pq::Error {
  using Error::Error;
};
// The connection failed or was lost (libpq's own errors, class 08, the
// server shutting down): the call's outcome is unknown.
struct ConnectionLost : pq::Error {
  using Error::Error;
};
// Anything else the server raised.
struct ServerError : pq::Error {
  using Error::Error;
};
// The call committed on the server it reached, but its wait for the
// synchronous standbys was cancelled (pg_cancel_backend): the server's
// WARNING (SQLSTATE 01000, message, DETAIL). A failover to a standby may lose
// the commit, so a grant answered so is not a grant (Leases gave it back), and
// a renewal is not a renewal (the expiry the client counts on is the one before
// it).
struct NotReplicated : pq::Error {
  using Error::Error;
};

// Throws the type above that matches e's SQLSTATE.
[[noreturn]] void rethrow_as_lease_error(const pq::Error& e);
// The same for a failed statement's result.
[[noreturn]] void raise_lease_error(const pq::Result& failed);

// True when the SQLSTATE says this grant is over for good: LD001, LD002,
// LD003 or 42501 answering a renewal.
bool ends_grant(const std::string& sqlstate);

// True when the SQLSTATE says the connection, not the statement, failed.
bool is_connection_failure(const std::string& sqlstate);

}  // namespace dlock::client
