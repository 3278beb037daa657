#include "tokens.h"

#include <string>

#include "errors.h"

namespace dlock {

std::int64_t epoch_floor(std::int64_t last_token) {
  constexpr std::int64_t step = std::int64_t{1} << kEpochBits;
  if (last_token < 0) last_token = 0;
  std::int64_t epoch = last_token >> kEpochBits;
  if (epoch + 2 > (INT64_MAX >> kEpochBits)) {
    throw Error(sqlstate::object_not_in_prerequisite_state,
                "fencing tokens are exhausted",
                "The last token is " + std::to_string(last_token) + ".");
  }
  return (epoch + 2) * step;
}

void check_token_sequence(bool cycles, std::int64_t cache,
                          std::int64_t increment, bool logged) {
  const char* problem = cycles       ? "it was altered to CYCLE"
                        : cache != 1 ? "its CACHE was altered from 1"
                        : increment <= 0
                            ? "its INCREMENT was altered to count down"
                        : !logged ? "it was altered to UNLOGGED"
                                  : nullptr;
  if (problem == nullptr) return;
  throw Error(sqlstate::object_not_in_prerequisite_state,
              "dlock.token_seq can no longer issue fencing tokens safely",
              std::string("The sequence must be NO CYCLE, CACHE 1, count up "
                          "and be logged; ") +
                  problem + ".",
              "ALTER SEQUENCE dlock.token_seq NO CYCLE CACHE 1 INCREMENT 1; "
              "ALTER SEQUENCE dlock.token_seq SET LOGGED;");
}

void check_token_grows(std::int64_t new_token, std::int64_t previous) {
  if (new_token > previous && new_token > 0) return;
  throw Error(sqlstate::object_not_in_prerequisite_state,
              "dlock.token_seq went backwards",
              "It issued " + std::to_string(new_token) +
                  " for a lease last granted with token " +
                  std::to_string(previous) + ".",
              "Move the sequence past every token issued: SELECT "
              "setval('dlock.token_seq', <largest token ever issued>);");
}

void check_token_issued(std::int64_t token,
                        std::optional<std::int64_t> last_issued) {
  if (token <= 0 || !last_issued || token > *last_issued) {
    throw Error(sqlstate::token_never_issued,
                "fencing token " + std::to_string(token) + " was never issued",
                last_issued ? "The largest token issued so far is " +
                                  std::to_string(*last_issued) + "."
                            : "No token has been issued yet.",
                "Use a token returned by dlock.try_acquire() or "
                "dlock.acquire().");
  }
}

}  // namespace dlock
