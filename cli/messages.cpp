#include "messages.h"

#include <cstdio>

namespace dlock::cli {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// text with every run of white space that holds a line break made one
// space, and no white space at either end.
std::string one_line(const std::string& text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t end = i;
    bool breaks = false;
    while (end < text.size() && is_space(text[end])) {
      breaks = breaks || text[end] == '\n' || text[end] == '\r';
      ++end;
    }
    if (end == i) {
      out += text[i++];
      continue;
    }
    bool at_an_end = i == 0 || end == text.size();
    if (!at_an_end) out += breaks ? std::string(" ") : text.substr(i, end - i);
    i = end;
  }
  return out;
}

// What to check when the server does not know dlock's schema or one of its
// functions: "" for other errors.
std::string hint_for(const pq::Error& e) {
  const std::string& message = e.what();
  auto mentions = [&](const char* s) {
    return message.find(s) != std::string::npos;
  };
  if (e.sqlstate() == "3F000" && mentions("\"dlock\"")) {
    return "is dlock installed in this database? CREATE EXTENSION dlock";
  }
  if (e.sqlstate() == "42883" && mentions("function dlock.")) {
    return "is dlock installed in this database, and up to date? CREATE "
           "EXTENSION dlock, or ALTER EXTENSION dlock UPDATE";
  }
  return "";
}

}  // namespace

std::string error_text(const pq::Error& e) {
  std::string text = one_line(e.what());
  for (const std::string& note : {one_line(e.detail()), hint_for(e)}) {
    if (!note.empty()) text += " (" + note + ")";
  }
  return e.sqlstate().empty() ? text : e.sqlstate() + ": " + text;
}

void say(const std::string& text) {
  std::string line = "dlock: " + text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace dlock::cli
