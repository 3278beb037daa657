#include "messages.h"

#include <gtest/gtest.h>

namespace dlock::cli {
namespace {

TEST(ServerErrorText, SqlstateThenTheMessageWithoutItsSeverity) {
  EXPECT_EQ(server_error_text("LD002",
                              "ERROR:  lease \"job\" is not held with token "
                              "7\nDETAIL:  It expired.\n"),
            "LD002: lease \"job\" is not held with token 7\n"
            "DETAIL:  It expired.");
  EXPECT_EQ(server_error_text("08001", "could not connect: no server\n"),
            "08001: could not connect: no server");
  EXPECT_EQ(server_error_text("", "FATAL:  terminating connection"),
            "terminating connection");
  EXPECT_EQ(server_error_text("57P01", "server closed the connection"),
            "57P01: server closed the connection");
}

}  // namespace
}  // namespace dlock::cli
