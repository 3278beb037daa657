// Reading the server's dlock_lease_ended payloads.
#include <dlock/lease_ended.h>

#include <gtest/gtest.h>

namespace dlock::client {
namespace {

TEST(LeaseEnded, ReadsAForceRelease) {
  auto e = parse_lease_ended(
      R"({"name": "nightly-report", "token": 42, "reason": "force-released",)"
      R"( "by": "ops", "detail": "deploy"})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->name, "nightly-report");
  EXPECT_EQ(e->token, 42);
  EXPECT_EQ(e->reason, "force-released");
  EXPECT_EQ(e->by, "ops");
  EXPECT_EQ(e->detail, "deploy");
  EXPECT_FALSE(e->new_token);
  EXPECT_EQ(e->describe(), "force-released by ops: deploy");
}

TEST(LeaseEnded, ReadsATakeover) {
  auto e = parse_lease_ended(
      R"({"name": "a \"quoted\" name", "token": 8796093022209, "reason": "taken-over",)"
      R"( "by": "app", "detail": "", "new_token": 8796093022210})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->name, "a \"quoted\" name");
  EXPECT_EQ(e->token, 8796093022209);
  EXPECT_EQ(e->new_token, 8796093022210);
  EXPECT_EQ(e->describe(), "taken over after expiry by token 8796093022210");
}

TEST(LeaseEnded, ReadsAReleaseAll) {
  auto e = parse_lease_ended(
      R"({"name": "n", "token": 1, "reason": "released-all", "by": "ops", "detail": ""})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->describe(), "released by release_all as ops");
}

TEST(LeaseEnded, RefusesOtherPayloads) {
  EXPECT_FALSE(parse_lease_ended(""));
  EXPECT_FALSE(parse_lease_ended("not json"));
  EXPECT_FALSE(parse_lease_ended("[1, 2]"));
  EXPECT_FALSE(parse_lease_ended(R"({"name": "n"})"));
  EXPECT_FALSE(parse_lease_ended(R"({"name": "n", "token": "1"})"));
  EXPECT_FALSE(parse_lease_ended(R"({"name": 1, "token": 1})"));
}

}  // namespace
}  // namespace dlock::client
