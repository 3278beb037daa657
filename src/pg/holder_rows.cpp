#include <optional>

#include "../core/duration.h"
#include "../core/holders.h"
#include "../core/lease_rules.h"

#include "holder_rows.h"
#include "relations.h"
#include "spi.h"
#include "tokens.h"

namespace dlock::pg {

namespace {

SavedPlan insert_holder_row = {
    "INSERT INTO dlock.lease_holders"
    "       (name, token, acquired_at, expires_at, ttl, acquired_by, owner,"
    "        lock_delay, max_hold, backend_pid, backend_start, min_hold,"
    "        shared, permits)"
    " VALUES ($1, $7, $4, $5, $6, $3, $2, $8, $9, $10, $11, $12, $13, $14)",
    14,
    {TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INTERVALOID,
     INT8OID, INTERVALOID, INTERVALOID, INT4OID, TIMESTAMPTZOID, INTERVALOID,
     BOOLOID, INT4OID},
    nullptr};

SavedPlan select_holder_for_share = {
    "SELECT " DLOCK_HOLDER_COLUMNS
    " FROM dlock.lease_holders"
    " WHERE name OPERATOR(pg_catalog.=) $1 AND token OPERATOR(pg_catalog.=) $2"
    " FOR SHARE",
    2,
    {TEXTOID, INT8OID},
    nullptr};

}  // namespace

LeaseRows read_holders(const char* name, Seen seen) {
  return read_rows(LeaseTable::holders, name, 0, seen);
}

std::optional<LeaseRow> read_holder(const char* name, int64 token) {
  // Tokens are positive: 0 would scan every holder of the name.
  if (token <= 0) return std::nullopt;
  LeaseRows rows = read_rows(LeaseTable::holders, name, token, Seen::snapshot);
  if (rows.count == 0) return std::nullopt;
  return rows.rows[0];
}

std::optional<LeaseRow> read_holder_for_share(const char* name, int64 token) {
  OwnerSpi spi = owner_spi_connect();
  Datum args[2] = {CStringGetTextDatum(name), Int64GetDatum(token)};
  std::optional<LeaseRow> row;
  if (run_plan(select_holder_for_share, args, "  ") == 1) {
    row = decode_holder(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
                        spi.caller_cxt);
  }
  owner_spi_finish(spi);
  return row;
}

namespace {

// The name's latest grant, of its lease_store row and its holders.
std::optional<LeaseRow> latest_grant(const char* name,
                                     const std::optional<LeaseRow>& row) {
  std::optional<LeaseRow> latest = row;
  LeaseRows holders = read_holders(name, Seen::snapshot);
  for (int i = 0; i < holders.count; ++i) {
    if (!latest || holders.rows[i].token > latest->token) {
      latest = holders.rows[i];
    }
  }
  return latest;
}

}  // namespace

std::optional<LeaseRow> read_grant(const char* name, int64 token) {
  std::optional<LeaseRow> row = read_lease(name);
  if (row && row->token == token) return row;
  std::optional<LeaseRow> holder = read_holder(name, token);
  if (holder) return holder;
  // A snapshot older than the grant cannot say it was never made.
  if (IsolationUsesXactSnapshot() &&
      !same_version(row, read_lease(name, Seen::latest))) {
    raise_serialization_failure();
  }
  return latest_grant(name, row);
}

int64 latest_token(const char* name) {
  std::optional<LeaseRow> latest = latest_grant(name, read_lease(name));
  return latest ? latest->token : 0;
}

void insert_holder(const char* name, const char* owner, bool shared,
                   int permits, const GrantTerms& terms, int64* token) {
  *token = next_token();
  Datum args[14] = {
      CStringGetTextDatum(name),
      CStringGetTextDatum(owner),
      CStringGetTextDatum(GetUserNameFromId(GetUserId(), false)),
      TimestampTzGetDatum(terms.now),
      TimestampTzGetDatum(terms.expires_at),
      IntervalPGetDatum(terms.ttl),
      Int64GetDatum(*token),
      IntervalPGetDatum(terms.lock_delay),
      PointerGetDatum(terms.max_hold),
      Int32GetDatum(MyProcPid),
      TimestampTzGetDatum(MyStartTimestamp),
      PointerGetDatum(terms.min_hold),
      BoolGetDatum(shared),
      Int32GetDatum(permits),
  };
  char nulls[] = "              ";
  if (terms.max_hold == nullptr) nulls[8] = 'n';
  if (terms.min_hold == nullptr) nulls[11] = 'n';
  OwnerSpi spi = owner_spi_connect();
  (void)run_plan(insert_holder_row, args, nulls);
  owner_spi_finish(spi);
}

}  // namespace dlock::pg
