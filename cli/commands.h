// The subcommands, each returning dlock's exit code. Durations in the
// options are read on the server as needed.
#pragma once

#include "options.h"

namespace dlock::cli {

// dlock run's own exit codes; COMMAND's status otherwise (child.h).
inline constexpr int kExitLost = 76;
inline constexpr int kExitRunFailed = 125;
// The other subcommands' error.
inline constexpr int kExitFailed = 1;

int run_command(RunOptions& o);
int acquire_command(AcquireOptions& o);
int renew_command(RenewOptions& o);
int release_command(ReleaseOptions& o);
int status_command(const StatusOptions& o);

}  // namespace dlock::cli
