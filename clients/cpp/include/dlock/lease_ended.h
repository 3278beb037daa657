// The server's word that a grant ended other than by its holder's own
// release: dlock NOTIFYs channel "dlock_lease_ended" at the commit of the
// transaction that ended it, with a JSON payload:
//
//   {"name": "nightly-report", "token": 42, "reason": "force-released",
//    "by": "ops", "detail": "deploy"}
//
// reason is "force-released" (detail: the reason given), "taken-over" (a
// new grant after expiry; new_token names it) or "released-all"; by is the
// role that ended it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dlock::client {

inline constexpr char kLeaseEndedChannel[] = "dlock_lease_ended";

struct LeaseEnded {
  std::string name;
  std::int64_t token = 0;
  std::string reason;
  std::string by;
  std::string detail;
  std::optional<std::int64_t> new_token;

  // "force-released by ops: deploy", "taken over by token 43", ...
  std::string describe() const;
};

// nullopt if the payload is not such an object.
std::optional<LeaseEnded> parse_lease_ended(const std::string& payload);

}  // namespace dlock::client
