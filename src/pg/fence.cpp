// dlock.fence(): the highest token accepted per resource, for storage that
// has no token column of its own.

#include "../core/errors.h"
#include "../core/tokens.h"

#include "args.h"
#include "boundary.h"
#include "spi.h"
#include "tokens.h"

namespace dlock::pg {
namespace {

// Accepts a token equal to or above the resource's highest. ON CONFLICT
// locks the resource's row even when the token is refused.
SavedPlan accept_token = {
    "INSERT INTO dlock.fences AS f (resource, token, fenced_at)"
    " VALUES ($1, $2, $3)"
    " ON CONFLICT (resource) DO UPDATE"
    "   SET token = $2, fenced_at = $3"
    " WHERE f.token OPERATOR(pg_catalog.<=) $2"
    " RETURNING token",
    3,
    {TEXTOID, INT8OID, TIMESTAMPTZOID},
    nullptr};

// The resource's highest accepted token.
SavedPlan highest_token = {
    "SELECT token FROM dlock.fences WHERE resource OPERATOR(pg_catalog.=) $1",
    1,
    {TEXTOID},
    nullptr};

}  // namespace

// dlock.fence(resource text, token bigint) RETURNS bigint
DLOCK_FUNCTION(dlock_fence) {
  const char* resource = required_name(fcinfo, 0, "resource");
  int64 token = required_token(fcinfo, 1);
  dlock::check_token_issued(token, last_issued_token());
  OwnerSpi spi = owner_spi_connect();
  Datum args[3] = {CStringGetTextDatum(resource), Int64GetDatum(token),
                   TimestampTzGetDatum(GetCurrentTimestamp())};
  bool accepted = run_plan(accept_token, args, "   ") == 1;
  int64 highest = token;
  if (!accepted) {
    bool isnull;
    run_plan(highest_token, args, " ");
    highest = DatumGetInt64(result_value(0, 1, &isnull));
  }
  owner_spi_finish(spi);
  if (!accepted) {
    throw_error(sqlstate::stale_token,
                psprintf("fencing token %lld is stale for resource \"%s\"",
                         static_cast<long long>(token), resource),
                psprintf("The resource has accepted token %lld.",
                         static_cast<long long>(highest)),
                "Stop writing: a newer holder has written this resource.");
  }
  PG_RETURN_INT64(token);
}

}  // namespace dlock::pg
