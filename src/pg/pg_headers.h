// The one header through which dlock's glue sees PostgreSQL. C++ standard
// headers and src/core's headers come first: PostgreSQL's port.h redefines
// snprintf and friends, and src/core's headers refuse to follow
// postgres.h. Code in src/pg must not use std::snprintf; use psprintf or
// StringInfo.
#pragma once

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <type_traits>

#include "../core/advisory_key.h"
#include "../core/arguments.h"
#include "../core/deadline.h"
#include "../core/duration.h"
#include "../core/errors.h"
#include "../core/fenced_update_sql.h"
#include "../core/holders.h"
#include "../core/lease_rules.h"
#include "../core/lease_stats.h"
#include "../core/tokens.h"

extern "C" {
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_sequence.h"
#include "commands/async.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "libpq/libpq-be.h"
#include "libpq/libpq.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "parser/parse_func.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/sinvaladt.h"
#include "storage/spin.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
}
