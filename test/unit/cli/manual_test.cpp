// The --help texts (cli/usage.cpp) and the manual, docs/reference/
// dlock-command.md (the source of dlock(1)), must not disagree: the same
// subcommands with the same synopses, for each of them the same options with
// the same arguments, and the same exit statuses.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "usage.h"

namespace dlock::cli {
namespace {

using Set = std::set<std::string>;
using Lines = std::vector<std::string>;

Lines lines_of(const std::string& text) {
  Lines out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

Lines manual() {
  std::ifstream in(std::string(DLOCK_SOURCE_DIR) +
                   "/docs/reference/dlock-command.md");
  EXPECT_TRUE(in.good()) << "docs/reference/dlock-command.md not found";
  std::stringstream text;
  text << in.rdbuf();
  return lines_of(text.str());
}

// The lines of the manual's section "## NAME", up to the next "## ".
Lines section(const Lines& page, const std::string& name) {
  Lines out;
  bool in_section = false;
  for (const std::string& line : page) {
    if (line.rfind("## ", 0) == 0) {
      in_section = line == "## " + name;
    } else if (in_section) {
      out.push_back(line);
    }
  }
  EXPECT_FALSE(out.empty()) << "the manual has no section " << name;
  return out;
}

// --help's subcommands: the words that open the lines under "Commands:".
Set help_commands() {
  Set out;
  bool in_list = false;
  static const std::regex command(R"(^  ([a-z]+) )");
  for (const std::string& line : lines_of(std::string(help_text("")))) {
    std::smatch m;
    if (line == "Commands:") {
      in_list = true;
    } else if (line.empty()) {
      in_list = false;
    } else if (in_list && std::regex_search(line, m, command)) {
      out.insert(m[1]);
    }
  }
  return out;
}

// The options a --help lists, each with its argument: "--ttl D", "-h".
Set help_options(std::string_view topic) {
  Set out;
  static const std::regex spec(R"(^ {2,8}(-\S.*?)(  |$))");
  for (const std::string& line : lines_of(std::string(help_text(topic)))) {
    std::smatch m;
    if (!std::regex_search(line, m, spec)) continue;
    std::string specs = m[1];
    for (size_t start = 0;;) {
      size_t comma = specs.find(", ", start);
      out.insert(specs.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 2;
    }
  }
  return out;
}

// The statuses a --help's "Exit status:" paragraph names: numbers ("128"
// for 128+N) and "COMMAND's".
Set help_exit_statuses(std::string_view topic) {
  std::string text(help_text(topic));
  size_t at = text.find("Exit status:");
  if (at == std::string::npos) return {};
  text = text.substr(at);
  Set out;
  static const std::regex number(R"(\b\d+\b)");
  for (std::sregex_iterator it(text.begin(), text.end(), number), end;
       it != end; ++it) {
    out.insert(it->str());
  }
  if (text.find("COMMAND's") != std::string::npos) out.insert("COMMAND's");
  return out;
}

// Whom a manual entry's "(...)" names: `dlock` (topic ""), subcommands in
// backquotes, "every subcommand", and "but" before the ones left out.
Set topics_of(const std::string& text, const Set& subcommands) {
  static const std::regex quoted("`([a-z]+)`");
  auto names = [](const std::string& s) {
    Set out;
    for (std::sregex_iterator it(s.begin(), s.end(), quoted), end; it != end;
         ++it) {
      std::string name = (*it)[1];
      out.insert(name == "dlock" ? "" : name);
    }
    return out;
  };
  size_t but = text.find(" but ");
  std::string taken = text.substr(0, but);
  Set out = names(taken);
  if (taken.find("every subcommand") != std::string::npos) {
    out.insert(subcommands.begin(), subcommands.end());
  }
  if (but != std::string::npos) {
    for (const std::string& name : names(text.substr(but))) out.erase(name);
  }
  return out;
}

// The entries "- TERMS (WHOM): ..." of a manual section, by topic: each
// term as term_of makes it.
template <typename TermOf>
std::map<std::string, Set> entries_by_topic(const Lines& lines,
                                            const std::regex& entry,
                                            const Set& subcommands,
                                            TermOf term_of) {
  std::map<std::string, Set> out;
  for (const std::string& line : lines) {
    std::smatch m;
    if (!std::regex_search(line, m, entry)) continue;
    Set terms = term_of(m[1].str());
    for (const std::string& topic : topics_of(m[2], subcommands)) {
      out[topic].insert(terms.begin(), terms.end());
    }
  }
  return out;
}

class ManualTest : public ::testing::Test {
 protected:
  Lines page_ = manual();
  Set subcommands_ = help_commands();
};

TEST_F(ManualTest, SynopsisNamesEverySubcommandAsItsHelpDoes) {
  ASSERT_FALSE(subcommands_.empty()) << "dlock --help lists no commands";
  Lines synopsis;
  bool in_block = false;
  for (const std::string& line : section(page_, "SYNOPSIS")) {
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block;
    } else if (in_block) {
      synopsis.push_back(line);
    }
  }
  Set in_manual;
  static const std::regex subcommand_line(R"(^dlock ([a-z]+) )");
  for (const std::string& line : synopsis) {
    std::smatch m;
    if (std::regex_search(line, m, subcommand_line)) in_manual.insert(m[1]);
  }
  EXPECT_EQ(in_manual, subcommands_)
      << "the manual's synopsis and dlock --help name other subcommands";
  for (const std::string& name : subcommands_) {
    std::string help(help_text(name));
    std::string usage = help.substr(0, help.find('\n'));
    ASSERT_EQ(usage.rfind("Usage: ", 0), 0u) << name << ": " << usage;
    std::string expected = usage.substr(7);
    bool found = false;
    for (const std::string& line : synopsis) found = found || line == expected;
    EXPECT_TRUE(found) << "the manual's synopsis lacks \"" << expected
                       << "\" (dlock " << name << " --help)";
  }
}

TEST_F(ManualTest, OptionsAreTheHelpsOptions) {
  // - `--ttl D` (`run`, `acquire`, `renew`): ...
  static const std::regex entry(R"(^- ((?:`[^`]+`(?:, )?)+) \(([^)]*)\):)");
  static const std::regex quoted("`([^`]+)`");
  auto options = entries_by_topic(
      section(page_, "OPTIONS"), entry, subcommands_, [](const std::string& s) {
        Set out;
        for (std::sregex_iterator it(s.begin(), s.end(), quoted), end;
             it != end; ++it) {
          out.insert((*it)[1]);
        }
        return out;
      });
  Set topics = subcommands_;
  topics.insert("");
  for (const std::string& topic : topics) {
    EXPECT_FALSE(help_options(topic).empty()) << "no options in --help";
    EXPECT_EQ(options[topic], help_options(topic))
        << "the manual's OPTIONS (left) and dlock " << topic
        << (topic.empty() ? "" : " ") << "--help (right) differ";
  }
}

TEST_F(ManualTest, ExitStatusesAreTheHelpsStatuses) {
  // - **75** (`run`, `acquire`): ...    - **128 + N** (`run`): ...
  static const std::regex entry(R"(^- \*\*([^*]+)\*\* \(([^)]*)\):)");
  static const std::regex leading_number(R"(^(\d+))");
  auto statuses = entries_by_topic(
      section(page_, "EXIT STATUS"), entry, subcommands_,
      [](const std::string& s) {
        std::smatch m;
        return Set{std::regex_search(s, m, leading_number) ? m[1].str() : s};
      });
  for (const std::string& name : subcommands_) {
    Set in_help = help_exit_statuses(name);
    EXPECT_FALSE(in_help.empty())
        << "dlock " << name << " --help has no exit status";
    EXPECT_EQ(statuses[name], in_help)
        << "the manual's EXIT STATUS (left) and dlock " << name
        << " --help (right) differ";
  }
}

}  // namespace
}  // namespace dlock::cli
