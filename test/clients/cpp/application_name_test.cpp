// The application_name of a lease's sessions: whole when it fits in the
// server's 63 bytes, else the longer of name and owner cut first.
#include <dlock/application_name.h>

#include <gtest/gtest.h>

#include <string>

namespace dlock::client {
namespace {

TEST(ApplicationNameTest, WholeWhenItFits) {
  EXPECT_EQ(
      application_name("dlock run", "nightly-report", "web-1:4242:9f2c01ab"),
      "dlock run nightly-report (web-1:4242:9f2c01ab)");
}

TEST(ApplicationNameTest, ExactlySixtyThreeBytesIsWhole) {
  // "dlock run " and " ()" are 13 bytes: 50 are left for name and owner.
  std::string name(30, 'n');
  std::string owner(20, 'o');
  std::string got = application_name("dlock run", name, owner);
  EXPECT_EQ(got, "dlock run " + name + " (" + owner + ")");
  EXPECT_EQ(got.size(), 63u);
}

TEST(ApplicationNameTest, ALongNameIsCutAndTheOwnerKept) {
  std::string name(80, 'n');
  EXPECT_EQ(application_name("dlock run", name, "web-1:4242:9f2c01ab"),
            "dlock run " + std::string(28, 'n') + "... (web-1:4242:9f2c01ab)");
}

TEST(ApplicationNameTest, ALongOwnerIsCutAndTheNameKept) {
  std::string owner(80, 'o');
  EXPECT_EQ(application_name("dlock run", "nightly-report", owner),
            "dlock run nightly-report (" + std::string(33, 'o') + "...)");
}

TEST(ApplicationNameTest, BothLongShareTheRoom) {
  std::string got =
      application_name("dlock run", std::string(80, 'n'), std::string(80, 'o'));
  EXPECT_EQ(got, "dlock run " + std::string(22, 'n') + "... (" +
                     std::string(22, 'o') + "...)");
  EXPECT_EQ(got.size(), 63u);
}

TEST(ApplicationNameTest, ACutNeverSplitsAUtf8Character) {
  // 'é' is two bytes; the name's room is 50 - 19 = 31, 28 before "...".
  // Byte 28 starts the fifteenth 'é': the cut keeps 14 of them.
  std::string name;
  for (int i = 0; i < 30; ++i) name += "\xc3\xa9";
  EXPECT_EQ(application_name("dlock run", name, "web-1:4242:9f2c01ab"),
            "dlock run " + name.substr(0, 28) + "... (web-1:4242:9f2c01ab)");
  // One byte ahead, byte 28 is the second half of an 'é': cut before it.
  name = "n" + name;
  EXPECT_EQ(application_name("dlock run", name, "web-1:4242:9f2c01ab"),
            "dlock run " + name.substr(0, 27) + "... (web-1:4242:9f2c01ab)");
}

}  // namespace
}  // namespace dlock::client
