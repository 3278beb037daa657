// SPI as dlock uses it. Statements on dlock's own tables run as their
// owner, so that callers need no privileges on them (and get none), with
// plans saved on first use; the plans live next to the SQL functions that
// run them. Statements on the caller's tables (fenced_update, protect) run
// as the caller. Every reference is schema-qualified, operators included,
// so the caller's search_path cannot redirect it.
#pragma once

#include "boundary.h"

namespace dlock::pg {

// An open SPI connection running as the table owner. On error, transaction
// or subtransaction abort restores the user and closes SPI;
// owner_spi_finish() is for the success path.
struct OwnerSpi {
  MemoryContext caller_cxt;  // the SQL function's memory context
  Oid saved_user;
  int saved_sec_context;
};
DLOCK_PLAIN_STRUCT(OwnerSpi);

OwnerSpi owner_spi_connect();
void owner_spi_finish(const OwnerSpi& spi);

// A statement whose plan is prepared and kept on its first run.
struct SavedPlan {
  const char* sql;
  int nargs;
  Oid types[14];
  SPIPlanPtr plan;  // NULL until first run
};
DLOCK_PLAIN_STRUCT(SavedPlan);

// Runs the plan (inside owner_spi_connect/finish); nulls[i] is 'n' for a
// NULL argument, ' ' otherwise. Returns the rows processed.
uint64 run_plan(SavedPlan& plan, const Datum* args, const char* nulls);

// Connects to SPI as the current user; pair with SPI_finish().
void spi_connect();

// Runs a one-off statement in an open SPI connection, as the current user;
// returns the rows processed.
uint64 run_statement(const char* sql, int nargs, Oid* types, Datum* args);

// Column `column` (from 1) of result row `row` (from 0); NULL sets *isnull.
Datum result_value(uint64 row, int column, bool* isnull);

}  // namespace dlock::pg
