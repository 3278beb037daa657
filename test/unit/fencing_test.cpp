// Unit tests of src/core/fencing: token epochs, the checks on tokens and on
// the token sequence, and the SQL text of fenced_update().
#include "fencing.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "errors.h"
#include "lease_rules.h"

namespace dlock {
namespace {

constexpr std::int64_t kStep = std::int64_t{1} << kEpochBits;

template <typename F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected dlock::Error";
  return Error(sqlstate::internal_error, "none");
}

TEST(EpochFloor, JumpsAtLeastOneEpochAboveTheLastToken) {
  EXPECT_EQ(epoch_floor(0), 2 * kStep);
  EXPECT_EQ(epoch_floor(1), 2 * kStep);
  EXPECT_EQ(epoch_floor(kStep - 1), 2 * kStep);
  EXPECT_EQ(epoch_floor(kStep), 3 * kStep);
  EXPECT_EQ(epoch_floor(2 * kStep + 5), 4 * kStep);
  for (std::int64_t last : {std::int64_t{0}, std::int64_t{7}, kStep - 1, kStep,
                            5 * kStep + 123}) {
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
  EXPECT_STREQ(error_of([&] { epoch_floor(top - kStep); }).sqlstate(),
               "55000");
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
  EXPECT_STREQ(error_of([] { check_token_issued(0, 10); }).sqlstate(),
               "LD003");
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

FencedColumn column(const char* name, const char* type) {
  return FencedColumn{name, type, "", false};
}

FencedColumn match_on(const char* name, const char* type, bool is_null) {
  return FencedColumn{name, type, "OPERATOR(pg_catalog.=)", is_null};
}

TEST(BuildFencedUpdate, OneStatementWithTypedBoundValues) {
  FencedUpdateSql sql = build_fenced_update(
      "public.accounts", "fence_token",
      {column("balance", "numeric(8,2)"), column("\"Note\"", "pg_catalog.text")},
      {match_on("id", "integer", false), match_on("region", "pg_catalog.text", true)});
  EXPECT_EQ(sql.update,
            "UPDATE public.accounts AS t SET balance = c.balance, "
            "\"Note\" = c.\"Note\", fence_token = $1 FROM "
            "pg_catalog.jsonb_to_record($2) AS c(balance numeric(8,2), "
            "\"Note\" pg_catalog.text), "
            "pg_catalog.jsonb_to_record($3) AS m(id integer, region "
            "pg_catalog.text) "
            "WHERE t.id OPERATOR(pg_catalog.=) m.id AND t.region IS NULL AND "
            "(t.fence_token IS NULL OR t.fence_token OPERATOR(pg_catalog.<=) "
            "$1)");
  EXPECT_EQ(sql.higher,
            "SELECT pg_catalog.count(*), pg_catalog.max(t.fence_token) FROM "
            "public.accounts AS t, "
            "pg_catalog.jsonb_to_record($3) AS m(id integer, region "
            "pg_catalog.text) "
            "WHERE t.id OPERATOR(pg_catalog.=) m.id AND t.region IS NULL "
            "AND t.fence_token OPERATOR(pg_catalog.>) $1");
}

TEST(BuildFencedUpdate, RefusesEmptyChangesOrMatch) {
  std::vector<FencedColumn> match{match_on("id", "integer", false)};
  Error no_changes =
      error_of([&] { build_fenced_update("t", "f", {}, match); });
  EXPECT_STREQ(no_changes.sqlstate(), "22023");
  Error no_match = error_of(
      [] { build_fenced_update("t", "f", {column("a", "integer")}, {}); });
  EXPECT_STREQ(no_match.sqlstate(), "22023");
  EXPECT_FALSE(no_match.hint().empty());
}

TEST(DescribeDuration, WholeAndFractionalMilliseconds) {
  EXPECT_EQ(describe_duration(0), "0 ms");
  EXPECT_EQ(describe_duration(86'400'000'000), "86400000 ms");
  EXPECT_EQ(describe_duration(86'400'000'001), "86400000.001 ms");
  EXPECT_EQ(describe_duration(1'500), "1.5 ms");
  EXPECT_EQ(describe_duration(250), "0.25 ms");
  EXPECT_EQ(describe_duration(-1'000), "-1 ms");
  EXPECT_EQ(describe_duration(-250), "-0.25 ms");
}

TEST(WhyNotHeld, NonPositiveTokensWereNeverGranted) {
  LeaseRow row{10, 1'000, false, false};
  EXPECT_EQ(why_not_held(row, 0, 0), NotHeld::never_granted);
  EXPECT_EQ(why_not_held(row, -5, 0), NotHeld::never_granted);
  EXPECT_EQ(why_not_held(row, 9, 0), NotHeld::newer_token);
}

}  // namespace
}  // namespace dlock
