// The errors dlock's lease functions raise, as C++ types. A busy lease is
// not among them: try_acquire and acquire return std::nullopt for it.
// Every type derives from pgc::PgError, so sqlstate(), what() (the
// server's message) and detail() stay at hand.
#pragma once

#include <string>

#include "pg_client.h"

namespace dlock::client {

// LD002: the lease is not held with this token (expired, released, taken
// by a newer token, force-released; DETAIL says which).
struct LeaseNotHeld : pgc::PgError { using PgError::PgError; };
// LD001: a newer token holds the lease or has written.
struct StaleToken : pgc::PgError { using PgError::PgError; };
// LD003: dlock never issued this token.
struct TokenNeverIssued : pgc::PgError { using PgError::PgError; };
// 42501: the lease belongs to another role, or EXECUTE is missing.
struct NotPermitted : pgc::PgError { using PgError::PgError; };
// 22004, 22023: a bad argument (name, owner, ttl, ...).
struct InvalidArgument : pgc::PgError { using PgError::PgError; };
// The connection failed or was lost (libpq's own errors, class 08, the
// server shutting down): the call's outcome is unknown.
struct ConnectionLost : pgc::PgError { using PgError::PgError; };
// Anything else the server raised.
struct ServerError : pgc::PgError { using PgError::PgError; };
// The call committed on the server it reached, but its wait for the
// synchronous standbys was cancelled (pg_cancel_backend): the server's
// WARNING (SQLSTATE 01000, message, DETAIL). A failover to a standby may lose the commit, so a grant
// answered so is not a grant (Leases gave it back), and a renewal is not a
// renewal (the expiry the client counts on is the one before it).
struct NotReplicated : pgc::PgError { using PgError::PgError; };

// Throws the type above that matches e's SQLSTATE.
[[noreturn]] void rethrow_as_lease_error(const pgc::PgError& e);
// The same for a failed statement's result.
[[noreturn]] void raise_lease_error(const pgc::Result& failed);

// True when the SQLSTATE says this grant is over for good: LD001, LD002,
// LD003 or 42501 answering a renewal.
bool ends_grant(const std::string& sqlstate);

// True when the SQLSTATE says the connection, not the statement, failed.
bool is_connection_failure(const std::string& sqlstate);

}  // namespace dlock::client
