// The dlock command: runs a command under a lease, and takes, renews,
// releases and shows leases from scripts. cli/README.md lists its files.
#include <cstdio>
#include <string>
#include <variant>
#include <vector>

#include "commands.h"
#include "options.h"
#include "usage.h"

namespace dlock::cli {
namespace {

struct Dispatch {
  int operator()(const UsageError& e) const {
    return report_usage_error(e.topic, e.message);
  }
  int operator()(const HelpRequest& h) const {
    std::fwrite(help_text(h.topic).data(), 1, help_text(h.topic).size(),
                stdout);
    return 0;
  }
  int operator()(const VersionRequest&) const {
    std::printf("dlock %s\n", DLOCK_VERSION);
    return 0;
  }
  int operator()(RunOptions& o) const { return run_command(o); }
  int operator()(AcquireOptions& o) const { return acquire_command(o); }
  int operator()(RenewOptions& o) const { return renew_command(o); }
  int operator()(ReleaseOptions& o) const { return release_command(o); }
  int operator()(StatusOptions& o) const { return status_command(o); }
};

}  // namespace
}  // namespace dlock::cli

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  dlock::cli::Parsed parsed = dlock::cli::parse_command_line(args);
  return std::visit(dlock::cli::Dispatch{}, parsed);
}
