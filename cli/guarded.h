// A subcommand's body run so that a failure becomes one line on stderr
// ("dlock: SQLSTATE: message (detail)", messages.h) and the subcommand's
// failure exit code.
#pragma once

#include <exception>

#include "messages.h"
#include <dlock/pq.h>

namespace dlock::cli {

template <typename Body>
int guarded(int failure_code, Body body) {
  try {
    return body();
  } catch (const pq::Error& e) {
    say(error_text(e));
  } catch (const std::exception& e) {
    say(e.what());
  }
  return failure_code;
}

}  // namespace dlock::cli
