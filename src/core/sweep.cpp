#include "sweep.h"

#include <algorithm>
#include <cstdint>

namespace dlock {

int sweep_batch(int max_locks_per_transaction, int max_connections,
                int max_prepared_transactions) {
  std::int64_t table =
      static_cast<std::int64_t>(std::max(max_locks_per_transaction, 0)) *
      (static_cast<std::int64_t>(std::max(max_connections, 0)) +
       std::max(max_prepared_transactions, 0));
  return static_cast<int>(
      std::clamp<std::int64_t>(table / 10, 1, kMaxSweepBatch));
}

}  // namespace dlock
