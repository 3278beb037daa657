// Unit tests of src/core/errors: dlock::Error keeps what the glue turns
// into ereport(ERROR): SQLSTATE, message, DETAIL and HINT; and the errors
// table is the one of docs/reference/errors.md.
#include "errors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace dlock {
namespace {

TEST(Error, KeepsEverything) {
  Error e(sqlstate::lease_not_held, "lease \"job\" is not held with token 4",
          "The lease expired.", "Acquire the lease again.");
  EXPECT_STREQ(e.sqlstate(), "LD002");
  EXPECT_STREQ(e.what(), "lease \"job\" is not held with token 4");
  EXPECT_EQ(e.detail(), "The lease expired.");
  EXPECT_EQ(e.hint(), "Acquire the lease again.");
}

TEST(Error, DetailAndHintDefaultToEmpty) {
  Error e(sqlstate::invalid_parameter_value, "ttl must be positive");
  EXPECT_STREQ(e.sqlstate(), "22023");
  EXPECT_STREQ(e.what(), "ttl must be positive");
  EXPECT_EQ(e.detail(), "");
  EXPECT_EQ(e.hint(), "");
}

TEST(Error, IsARuntimeError) {
  try {
    throw Error(sqlstate::lock_not_available, "could not acquire lease");
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "could not acquire lease");
    const Error* de = dynamic_cast<const Error*>(&e);
    ASSERT_NE(de, nullptr);
    EXPECT_STREQ(de->sqlstate(), "55P03");
  }
}

TEST(Error, SqlstateIsCopiedNotReferenced) {
  char code[] = "LD001";
  Error e(code, "stale fencing token");
  std::memcpy(code, "00000", 5);
  EXPECT_STREQ(e.sqlstate(), "LD001");
}

TEST(Error, BadSqlstateBecomesInternalError) {
  EXPECT_STREQ(Error(nullptr, "m").sqlstate(), "XX000");
  EXPECT_STREQ(Error("", "m").sqlstate(), "XX000");
  EXPECT_STREQ(Error("2202", "m").sqlstate(), "XX000");
  EXPECT_STREQ(Error("220233", "m").sqlstate(), "XX000");
  EXPECT_STREQ(Error("not a sqlstate", "m").sqlstate(), "XX000");
}

TEST(Error, SqlstateWithCharactersPostgresCannotEncodeBecomesInternalError) {
  // A SQLSTATE is five characters from [0-9A-Z]; anything else would come
  // out garbled from PostgreSQL's six-bit encoding.
  EXPECT_STREQ(Error("ld002", "m").sqlstate(), "XX000");
  EXPECT_STREQ(Error("22 23", "m").sqlstate(), "XX000");
  EXPECT_STREQ(Error("2202!", "m").sqlstate(), "XX000");
  EXPECT_STREQ(Error("222\xC3\xA9", "m").sqlstate(), "XX000");  // 5 bytes
}

TEST(Error, BadSqlstateKeepsTheRest) {
  Error e("bad", "message", "detail", "hint");
  EXPECT_STREQ(e.sqlstate(), "XX000");
  EXPECT_STREQ(e.what(), "message");
  EXPECT_EQ(e.detail(), "detail");
  EXPECT_EQ(e.hint(), "hint");
}

TEST(Error, CopyKeepsEverything) {
  Error original(sqlstate::lease_not_held, "m", "d", "h");
  Error copy = original;
  EXPECT_STREQ(copy.sqlstate(), "LD002");
  EXPECT_STREQ(copy.what(), "m");
  EXPECT_EQ(copy.detail(), "d");
  EXPECT_EQ(copy.hint(), "h");
}

TEST(ErrorCodes, AreValidUniqueAndKept) {
  std::set<std::string> seen;
  for (const ErrorCode& code : kErrorCodes) {
    EXPECT_STREQ(Error(code.sqlstate, "m").sqlstate(), code.sqlstate);
    EXPECT_TRUE(seen.insert(code.sqlstate).second) << code.sqlstate;
    EXPECT_GT(std::strlen(code.name), 0u) << code.sqlstate;
    EXPECT_GT(std::strlen(code.raised_by), 0u) << code.sqlstate;
  }
}

// The rows of the table at the top of docs/reference/errors.md (before its
// first "## " heading): code, name, raised by, added in.
std::vector<std::vector<std::string>> documented_error_rows() {
  std::ifstream page(std::string(DLOCK_SOURCE_DIR) +
                     "/docs/reference/errors.md");
  EXPECT_TRUE(page.good()) << "docs/reference/errors.md not found";
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(page, line)) {
    if (line.rfind("## ", 0) == 0) break;
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream parts(line.substr(1));
    std::string cell;
    while (std::getline(parts, cell, '|')) {
      cell.erase(0, cell.find_first_not_of(' '));
      cell.erase(cell.find_last_not_of(' ') + 1);
      cells.push_back(cell);
    }
    rows.push_back(cells);
  }
  return rows;
}

// A release of dlock: digits, a dot, digits, a dot, digits.
bool is_version(const std::string& text) {
  int dots = 0;
  bool digit_before = false;
  for (char c : text) {
    if (c == '.' && digit_before) {
      ++dots;
      digit_before = false;
    } else if (c >= '0' && c <= '9') {
      digit_before = true;
    } else {
      return false;
    }
  }
  return dots == 2 && digit_before;
}

TEST(ErrorCodes, AreTheDocumentedErrorsTableRowForRow) {
  std::vector<std::vector<std::string>> rows = documented_error_rows();
  ASSERT_EQ(rows.size(), std::size(kErrorCodes));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ErrorCode& code = kErrorCodes[i];
    ASSERT_EQ(rows[i].size(), 4u) << "errors.md row " << i;
    EXPECT_EQ(rows[i][0], "`" + std::string(code.sqlstate) + "`");
    EXPECT_EQ(rows[i][1], code.name) << code.sqlstate;
    EXPECT_EQ(rows[i][2], code.raised_by) << code.sqlstate;
    EXPECT_TRUE(is_version(rows[i][3]))
        << code.sqlstate << ": added in " << rows[i][3];
  }
}

}  // namespace
}  // namespace dlock
