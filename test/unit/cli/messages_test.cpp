#include "messages.h"

#include <gtest/gtest.h>

namespace dlock::cli {
namespace {

TEST(ErrorText, SqlstateMessageAndDetailOnOneLine) {
  EXPECT_EQ(error_text(dlock::pq::Error(
                "LD002", "lease \"job\" is not held with token 7",
                "It expired at 2026-12-01 10:00:00+00.")),
            "LD002: lease \"job\" is not held with token 7 (It expired at "
            "2026-12-01 10:00:00+00.)");
  EXPECT_EQ(error_text(dlock::pq::Error("22023", "ttl must be positive")),
            "22023: ttl must be positive");
}

TEST(ErrorText, LibpqFailuresHaveNoSqlstate) {
  EXPECT_EQ(error_text(dlock::pq::Error(
                "",
                "server closed the connection unexpectedly\n\tThis "
                "probably means the server terminated abnormally\n")),
            "server closed the connection unexpectedly This probably means "
            "the server terminated abnormally");
}

TEST(ErrorText, ContinuationLinesAreJoinedWithOneSpace) {
  EXPECT_EQ(error_text(dlock::pq::Error(
                "08001",
                "could not connect: connection to server on socket "
                "\"/run/pg/.s.PGSQL.5432\" failed: No such file or directory\n"
                "\tIs the server running locally and accepting connections "
                "on that socket?")),
            "08001: could not connect: connection to server on socket "
            "\"/run/pg/.s.PGSQL.5432\" failed: No such file or directory Is "
            "the server running locally and accepting connections on that "
            "socket?");
  // Spaces within a line stay as they are.
  EXPECT_EQ(error_text(dlock::pq::Error("", "failed: FATAL:  no  such\r\n",
                                        "\n two\n\n lines \n")),
            "failed: FATAL:  no  such (two lines)");
}

// A database without dlock, or with an older version of it.
TEST(ErrorText, HintsAtCreateExtension) {
  EXPECT_EQ(
      error_text(dlock::pq::Error("3F000", "schema \"dlock\" does not exist")),
      "3F000: schema \"dlock\" does not exist (is dlock installed in this "
      "database? CREATE EXTENSION dlock)");
  EXPECT_EQ(
      error_text(dlock::pq::Error(
          "42883",
          "function dlock.renew(unknown, bigint, interval, owner => unknown) "
          "does not exist")),
      "42883: function dlock.renew(unknown, bigint, interval, owner => "
      "unknown) does not exist (is dlock installed in this database, and up "
      "to date? CREATE EXTENSION dlock, or ALTER EXTENSION dlock UPDATE)");
  // Other schemas and functions get no hint.
  EXPECT_EQ(
      error_text(dlock::pq::Error("3F000", "schema \"app\" does not exist")),
      "3F000: schema \"app\" does not exist");
  EXPECT_EQ(error_text(dlock::pq::Error(
                "42883", "function app.f() does not exist", "a detail")),
            "42883: function app.f() does not exist (a detail)");
}

}  // namespace
}  // namespace dlock::cli
