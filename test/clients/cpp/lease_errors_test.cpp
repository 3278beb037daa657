// The lease errors' table: each SQLSTATE dlock raises becomes its C++ type,
// and only the ones that end a grant answer ends_grant().
#include <dlock/lease_errors.h>
#include <gtest/gtest.h>

#include <string>

namespace dlock::client {
namespace {

template <typename T>
void expect_raised_as(const std::string& sqlstate) {
  try {
    rethrow_as_lease_error(pq::Error(sqlstate, "message", "detail"));
  } catch (const T& e) {
    EXPECT_EQ(e.sqlstate(), sqlstate);
    EXPECT_STREQ(e.what(), "message");
    EXPECT_EQ(e.detail(), "detail");
    return;
  } catch (const pq::Error& e) {
    ADD_FAILURE() << sqlstate << " raised as the wrong type";
    return;
  }
}

TEST(LeaseErrors, EachSqlstateHasItsType) {
  expect_raised_as<LeaseNotHeld>("LD002");
  expect_raised_as<StaleToken>("LD001");
  expect_raised_as<TokenNeverIssued>("LD003");
  expect_raised_as<LeaseModeConflict>("LD004");
  expect_raised_as<NotPermitted>("42501");
  expect_raised_as<InvalidArgument>("22004");
  expect_raised_as<InvalidArgument>("22023");
  expect_raised_as<ConnectionLost>("");
  expect_raised_as<ConnectionLost>("08006");
  expect_raised_as<ConnectionLost>("57P01");
  expect_raised_as<ServerError>("40001");
  expect_raised_as<ServerError>("55000");
}

TEST(LeaseErrors, OnlyRefusalsOfTheGrantEndIt) {
  for (const char* s : {"LD001", "LD002", "LD003", "42501"}) {
    EXPECT_TRUE(ends_grant(s)) << s;
  }
  for (const char* s : {"LD004", "22023", "22004", "40001", "08006", ""}) {
    EXPECT_FALSE(ends_grant(s)) << s;
  }
}

}  // namespace
}  // namespace dlock::client
