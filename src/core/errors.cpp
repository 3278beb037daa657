#include "errors.h"

#include <cstring>
#include <utility>

namespace dlock {

namespace {

// Five characters from [0-9A-Z]: the only SQLSTATEs PostgreSQL's six-bit
// encoding (MAKE_SQLSTATE) carries unchanged.
bool valid_sqlstate(const char* s) {
  if (s == nullptr || std::strlen(s) != 5) return false;
  for (int i = 0; i < 5; ++i) {
    bool digit = s[i] >= '0' && s[i] <= '9';
    bool upper = s[i] >= 'A' && s[i] <= 'Z';
    if (!digit && !upper) return false;
  }
  return true;
}

}  // namespace

Error::Error(const char* sqlstate, const std::string& message,
             std::string detail, std::string hint)
    : std::runtime_error(message),
      detail_(std::move(detail)),
      hint_(std::move(hint)) {
  if (!valid_sqlstate(sqlstate)) {
    std::memcpy(sqlstate_, sqlstate::internal_error, sizeof sqlstate_);
  } else {
    std::memcpy(sqlstate_, sqlstate, sizeof sqlstate_);
  }
}

}  // namespace dlock
