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

// The token sequence must stay NO CYCLE, CACHE 1 and logged: a cycle would
// reissue tokens, a cache would hand them out of grant order, and an
// unlogged sequence is reset by a crash. Throws 55000 otherwise.
void check_token_sequence(bool cycles, std::int64_t cache, bool logged);

// Throws LD003 unless 0 < token <= last_issued (absent: none issued yet).
void check_token_issued(std::int64_t token,
                        std::optional<std::int64_t> last_issued);

// One column of fenced_update()'s match: equal to the value given, or NULL.
struct MatchColumn {
  std::string column;    // quoted identifier
  std::string equality;  // the type's equality, e.g. OPERATOR(pg_catalog.=)
  bool is_null = false;  // the match value is JSON null: IS NULL
};

// The statements of one fenced_update() call; throws 22023 if changes or
// match is empty. Parameters: $1 token (bigint),
// $2 changes (jsonb), $3 match (jsonb). Values reach the columns through
// jsonb_populate_record() on the target's row type, i.e. through the column
// types' own input functions.
struct FencedUpdateSql {
  std::string update;     // returns the number of rows updated
  std::string highest;    // count(*) and max(fence) of the rows matched
};

FencedUpdateSql build_fenced_update(const std::string& target,
                                    const std::string& fence_column,
                                    const std::vector<std::string>& changes,
                                    const std::vector<MatchColumn>& match);

}  // namespace dlock
