#include "table.h"

#include <gtest/gtest.h>

#include <clocale>
#include <string>

namespace dlock::cli {
namespace {

TEST(Table, AlignsColumnsTwoSpacesApart) {
  std::vector<Column> columns = {{"name"},
                                 {"state"},
                                 {"token", Align::right},
                                 {"valid for", Align::right}};
  EXPECT_EQ(format_table(columns, {{"nightly-report", "held", "42", "29.998"},
                                   {"x", "expired", "7", ""}}),
            "name            state    token  valid for\n"
            "nightly-report  held        42     29.998\n"
            "x               expired      7\n");
}

TEST(Table, HeaderAloneWhenNoRows) {
  EXPECT_EQ(format_table({{"name"}, {"owner"}}, {}), "name  owner\n");
}

// A name with a line break must not forge a row, nor an escape sequence
// reach the terminal.
TEST(Table, ControlCharactersAreEscaped) {
  for (Charset charset : {Charset::utf8, Charset::bytes}) {
    EXPECT_EQ(
        format_table({{"name"}, {"state"}},
                     {{"job\nevil  held", "held"}, {"x", "expired"}}, charset),
        "name             state\n"
        "job\\nevil  held  held\n"
        "x                expired\n");
    EXPECT_EQ(escaped("a\tb\rc\x1b[31md\x7f\x01", charset),
              "a\\tb\\rc\\x1b[31md\\x7f\\x01");
    EXPECT_EQ(escaped(std::string("nul\0byte", 8), charset), "nul\\x00byte");
    // A backslash is escaped too, so that every escape reads one way.
    EXPECT_EQ(escaped("C:\\x1b", charset), "C:\\\\x1b");
  }
}

// Outside a UTF-8 locale, bytes beyond ASCII are escaped, one column per
// byte.
TEST(Table, BytesBeyondAsciiAreEscapedOutsideUtf8) {
  EXPECT_EQ(escaped("caf\xc3\xa9", Charset::bytes), "caf\\xc3\\xa9");
  EXPECT_EQ(format_table({{"name"}, {"state"}}, {{"caf\xc3\xa9", "held"}},
                         Charset::bytes),
            "name         state\n"
            "caf\\xc3\\xa9  held\n");
}

// The table in a UTF-8 locale (C.UTF-8 here), put back at the end.
class Utf8Table : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = std::setlocale(LC_CTYPE, nullptr);
    if (!std::setlocale(LC_CTYPE, "C.UTF-8")) GTEST_SKIP() << "no C.UTF-8";
  }
  void TearDown() override { std::setlocale(LC_CTYPE, saved_.c_str()); }

 private:
  std::string saved_;
};

TEST_F(Utf8Table, PadsByDisplayWidth) {
  // é is 2 bytes and 1 column; 中文 6 bytes and 4 columns; a combining
  // acute accent 2 bytes and no column.
  EXPECT_EQ(format_table({{"name"}, {"token", Align::right}},
                         {{"caf\xc3\xa9", "1"},
                          {"\xe4\xb8\xad\xe6\x96\x87", "22"},
                          {"cafe\xcc\x81", "333"}},
                         Charset::utf8),
            "name  token\n"
            "caf\xc3\xa9      1\n"
            "\xe4\xb8\xad\xe6\x96\x87     22\n"
            "cafe\xcc\x81    333\n");
}

TEST_F(Utf8Table, InvalidAndUnprintableUtf8IsEscaped) {
  // U+009B, a C1 control (CSI), is valid UTF-8 but no printable character.
  EXPECT_EQ(escaped("a\xc2\x9b"
                    "31m",
                    Charset::utf8),
            "a\\xc2\\x9b31m");
  // A stray continuation byte, a byte no UTF-8 has, a sequence cut short,
  // an overlong form of '/', a surrogate.
  EXPECT_EQ(escaped("\x80|\xff|\xe4\xb8|\xc0\xaf|\xed\xa0\x80", Charset::utf8),
            "\\x80|\\xff|\\xe4\\xb8|\\xc0\\xaf|\\xed\\xa0\\x80");
  // The longest sequences pass.
  EXPECT_EQ(escaped("\xf0\x9f\x94\x92", Charset::utf8), "\xf0\x9f\x94\x92");
}

}  // namespace
}  // namespace dlock::cli
