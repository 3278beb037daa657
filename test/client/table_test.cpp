#include "table.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace dlock::cli
