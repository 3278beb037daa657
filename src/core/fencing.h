// Fencing tokens and fenced writes, as pure functions: the token format
// across WAL timelines, the check that a token was ever issued, and the SQL
// text of dlock.fenced_update(). Identifiers arrive already quoted by
// PostgreSQL's quote_identifier(); values never appear in the SQL text.
#pragma once
#ifdef POSTGRES_H
#error "src/core is plain C++ and must not see PostgreSQL headers"
#endif

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

// A column named in fenced_update()'s changes or match.
struct FencedColumn {
  std::string column;    // quoted identifier
  std::string type;      // its type, schema-qualified, with typmod
  std::string equality;  // match only: the type's equality, OPERATOR(s.=)
  bool is_null = false;  // match only: the value is JSON null: IS NULL
};

// The statements of one fenced_update() call; throws 22023 if changes or
// match is empty. Parameters: $1 token (bigint), $2 changes (jsonb), $3
// match (jsonb). Values reach the columns through jsonb_to_record() with
// the columns' own types, i.e. through the types' input functions.
struct FencedUpdateSql {
  std::string update;   // the UPDATE; its row count is the result
  std::string higher;   // count(*) and max(fence) of matching rows whose
                        // fence is above $1
};

FencedUpdateSql build_fenced_update(const std::string& target,
                                    const std::string& fence_column,
                                    const std::vector<FencedColumn>& changes,
                                    const std::vector<FencedColumn>& match);

}  // namespace dlock
