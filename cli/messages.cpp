#include "messages.h"

#include <cstdio>
#include <string_view>

namespace dlock::cli {

std::string server_error_text(const std::string& sqlstate,
                              const std::string& message) {
  std::string text = message;
  for (std::string_view severity : {"ERROR:  ", "FATAL:  ", "PANIC:  "}) {
    if (text.compare(0, severity.size(), severity) == 0) {
      text.erase(0, severity.size());
      break;
    }
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.pop_back();
  }
  return sqlstate.empty() ? text : sqlstate + ": " + text;
}

void say(const std::string& text) {
  std::string line = "dlock: " + text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace dlock::cli
