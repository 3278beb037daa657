#include "errors.h"

#include <cstring>

namespace dlock {

Error::Error(const char* sqlstate, const std::string& message,
             std::string detail, std::string hint)
    : std::runtime_error(message),
      detail_(std::move(detail)),
      hint_(std::move(hint)) {
  if (sqlstate == nullptr || std::strlen(sqlstate) != 5) {
    std::memcpy(sqlstate_, sqlstate::internal_error, sizeof sqlstate_);
  } else {
    std::memcpy(sqlstate_, sqlstate, sizeof sqlstate_);
  }
}

}  // namespace dlock
