// Fencing tokens, as pure functions: the token format across histories
// (epochs), the checks on the token sequence, and the check that a token
// was ever issued.
#pragma once
#include "plain_cpp.h"

#include <cstdint>
#include <optional>

namespace dlock {

// Tokens are one bigint sequence. When grants start on a new history (a new
// WAL timeline after promotion or point-in-time recovery, or a new cluster
// after restore), the sequence first jumps to the next multiple of 2^40 at
// least 2^40 above its last value: a server that missed up to 2^40 of the
// old history's last grants still issues larger tokens. token >> 40 is the
// token's epoch.
inline constexpr int kEpochBits = 40;

// The value the sequence jumps to for a new history whose sequence last
// issued `last_token`. Throws 55000 near the top of the bigint range.
std::int64_t epoch_floor(std::int64_t last_token);

// The token sequence must stay NO CYCLE, CACHE 1, INCREMENT positive and
// logged: a cycle would reissue tokens, a cache would hand them out of
// grant order, a negative increment counts down, and an unlogged sequence
// is reset by a crash. Throws 55000 otherwise.
void check_token_sequence(bool cycles, std::int64_t cache,
                          std::int64_t increment, bool logged);

// A new grant's token must exceed the lease's previous one; a sequence
// moved back (RESTART, setval) would break that. Throws 55000.
void check_token_grows(std::int64_t new_token, std::int64_t previous);

// Throws LD003 unless 0 < token <= last_issued (absent: none issued yet).
void check_token_issued(std::int64_t token,
                        std::optional<std::int64_t> last_issued);

}  // namespace dlock
