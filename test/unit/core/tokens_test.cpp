// Unit tests of src/core/tokens: token epochs, and the checks on tokens
// and on the token sequence.
#include "tokens.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "errors.h"
#include "test_support.h"

namespace dlock {
namespace {

using namespace dlock::testing;

constexpr std::int64_t kStep = std::int64_t{1} << kEpochBits;

TEST(EpochFloor, JumpsAtLeastOneEpochAboveTheLastToken) {
  EXPECT_EQ(epoch_floor(0), 2 * kStep);
  EXPECT_EQ(epoch_floor(1), 2 * kStep);
  EXPECT_EQ(epoch_floor(kStep - 1), 2 * kStep);
  EXPECT_EQ(epoch_floor(kStep), 3 * kStep);
  EXPECT_EQ(epoch_floor(2 * kStep + 5), 4 * kStep);
  for (std::int64_t last :
       {std::int64_t{0}, std::int64_t{7}, kStep - 1, kStep, 5 * kStep + 123}) {
    std::int64_t floor = epoch_floor(last);
    EXPECT_GE(floor - last, kStep) << last;
    EXPECT_EQ(floor % kStep, 0) << last;
  }
}

TEST(EpochFloor, NegativeLastCountsAsNone) {
  EXPECT_EQ(epoch_floor(-5), 2 * kStep);
}

TEST(EpochFloor, RefusesNearTheTopOfBigint) {
  std::int64_t top = std::numeric_limits<std::int64_t>::max();
  EXPECT_STREQ(error_of([&] { epoch_floor(top); }).sqlstate(), "55000");
  EXPECT_STREQ(error_of([&] { epoch_floor(top - kStep); }).sqlstate(), "55000");
  // The last epoch that still fits.
  std::int64_t last_ok = (top >> kEpochBits) - 2;
  EXPECT_EQ(epoch_floor(last_ok * kStep), (last_ok + 2) * kStep);
}

TEST(CheckTokenIssued, AcceptsIssuedTokens) {
  EXPECT_NO_THROW(check_token_issued(1, 1));
  EXPECT_NO_THROW(check_token_issued(5, 10));
  EXPECT_NO_THROW(check_token_issued(10, 10));
}

TEST(CheckTokenIssued, RefusesOthersWithLD003) {
  Error above = error_of([] { check_token_issued(11, 10); });
  EXPECT_STREQ(above.sqlstate(), "LD003");
  EXPECT_STREQ(above.what(), "fencing token 11 was never issued");
  EXPECT_EQ(above.detail(), "The largest token issued so far is 10.");
  EXPECT_STREQ(error_of([] { check_token_issued(0, 10); }).sqlstate(), "LD003");
  EXPECT_STREQ(error_of([] { check_token_issued(-1, 10); }).sqlstate(),
               "LD003");
  Error none = error_of([] { check_token_issued(1, std::nullopt); });
  EXPECT_STREQ(none.sqlstate(), "LD003");
  EXPECT_EQ(none.detail(), "No token has been issued yet.");
}

TEST(CheckTokenSequence, AcceptsOnlyNoCycleCacheOneCountingUpLogged) {
  EXPECT_NO_THROW(check_token_sequence(false, 1, 1, true));
  EXPECT_NO_THROW(check_token_sequence(false, 1, 5, true));
  Error cycles = error_of([] { check_token_sequence(true, 1, 1, true); });
  EXPECT_STREQ(cycles.sqlstate(), "55000");
  EXPECT_NE(cycles.detail().find("CYCLE"), std::string::npos);
  Error cached = error_of([] { check_token_sequence(false, 20, 1, true); });
  EXPECT_STREQ(cached.sqlstate(), "55000");
  EXPECT_NE(cached.detail().find("CACHE"), std::string::npos);
  Error down = error_of([] { check_token_sequence(false, 1, -1, true); });
  EXPECT_STREQ(down.sqlstate(), "55000");
  EXPECT_NE(down.detail().find("INCREMENT"), std::string::npos);
  Error unlogged = error_of([] { check_token_sequence(false, 1, 1, false); });
  EXPECT_STREQ(unlogged.sqlstate(), "55000");
  EXPECT_NE(unlogged.detail().find("UNLOGGED"), std::string::npos);
}

TEST(CheckTokenGrows, NewTokenMustExceedThePrevious) {
  EXPECT_NO_THROW(check_token_grows(11, 10));
  EXPECT_NO_THROW(check_token_grows(1, 0));
  Error same = error_of([] { check_token_grows(10, 10); });
  EXPECT_STREQ(same.sqlstate(), "55000");
  EXPECT_EQ(same.detail(),
            "It issued 10 for a lease last granted with token 10.");
  EXPECT_STREQ(error_of([] { check_token_grows(3, 10); }).sqlstate(), "55000");
  EXPECT_STREQ(error_of([] { check_token_grows(0, -1); }).sqlstate(), "55000");
}

}  // namespace
}  // namespace dlock
