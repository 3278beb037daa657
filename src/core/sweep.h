// How many lease names one dlock.sweep call may take. Sweep takes each
// name's gate (a lock in the server's shared lock table) and holds it
// until commit, and a function cannot commit: so one call's names must
// leave the lock table to everyone else. The table is one for the whole
// cluster (every database, every connection), sized by PostgreSQL as
// max_locks_per_transaction × (max_connections + max_prepared_transactions)
// entries (its documented size; a little more in fact, for background
// workers and WAL senders).
#pragma once
#include "plain_cpp.h"

namespace dlock {

// The most names one call sweeps whatever the lock table's size.
inline constexpr int kMaxSweepBatch = 10000;

// One sweep takes at most a tenth of the lock table: a sweep in each of
// several databases at once (pg_cron's recipe) and everyone's own locks
// still fit. At PostgreSQL's defaults (64 × (100 + 0)) that is 640 names;
// at least 1, at most kMaxSweepBatch.
int sweep_batch(int max_locks_per_transaction, int max_connections,
                int max_prepared_transactions);

}  // namespace dlock
