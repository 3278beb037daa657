// dlock_history_check: checks the histories that failure runs log
// (history.h) against the rules of checker.h and prints the report.
//
//   dlock_history_check [--fault-free] [--cycles] PATH...
//
// Each PATH is a history file, or a directory whose *.jsonl files are
// read. --fault-free and --cycles add the rules of checker.h's Expect for
// runs that promise them (the pooler stress run does). Exit status: 0 no
// violation, 1 violations, 2 a usage error or a file that cannot be read or
// holds a malformed line.
#include <algorithm>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include "checker.h"
#include "history.h"

namespace {

namespace fs = std::filesystem;
using dlock::history::check;
using dlock::history::read_files;
using dlock::history::report;

constexpr int kClean = 0;
constexpr int kViolations = 1;
constexpr int kTrouble = 2;

const char kUsage[] =
    "usage: dlock_history_check [--fault-free] [--cycles] PATH...\n"
    "Checks dlock failure-run histories: each PATH is a history file (JSON\n"
    "lines) or a directory whose *.jsonl files are read together.\n"
    "--fault-free: every call must be answered ok, writes fall within their\n"
    "holds, releases come before the expiry. --cycles: each grant has one\n"
    "write, one renewal and one release of its token.\n"
    "Exit status: 0 no violation, 1 violations, 2 usage or input error.\n";

// The files PATH names: itself, or a directory's *.jsonl in name order.
std::vector<std::string> files_of(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return {path};
  std::vector<std::string> files;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end;
       it.increment(ec))
    if (it->path().extension() == ".jsonl" && !it->is_directory(ec))
      files.push_back(it->path().string());
  if (ec) throw std::runtime_error("cannot list " + path + ": " + ec.message());
  if (files.empty()) throw std::runtime_error("no *.jsonl history in " + path);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return kTrouble;
  }
  if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
    std::cout << kUsage;
    return kClean;
  }
  try {
    std::vector<std::string> files;
    dlock::history::Expect expect;
    for (const std::string& arg : args) {
      if (arg == "--fault-free") {
        expect.fault_free = true;
        continue;
      }
      if (arg == "--cycles") {
        expect.cycles = true;
        continue;
      }
      if (!arg.empty() && arg[0] == '-') {
        std::cerr << "dlock_history_check: unknown option " << arg << "\n"
                  << kUsage;
        return kTrouble;
      }
      for (std::string& f : files_of(arg)) files.push_back(std::move(f));
    }
    if (files.empty()) {
      std::cerr << kUsage;
      return kTrouble;
    }
    auto verdict = check(read_files(files), expect);
    std::cout << report(verdict);
    return verdict.violations.empty() ? kClean : kViolations;
  } catch (const std::exception& e) {
    std::cerr << "dlock_history_check: " << e.what() << "\n";
    return kTrouble;
  }
}
