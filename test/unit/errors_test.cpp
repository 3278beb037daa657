// Unit tests of src/core/errors: dlock::Error keeps what the glue turns
// into ereport(ERROR): SQLSTATE, message, DETAIL and HINT.
#include "errors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>

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

TEST(Error, EveryDeclaredCodeIsKept) {
  const char* codes[] = {sqlstate::null_value_not_allowed,
                         sqlstate::invalid_parameter_value,
                         sqlstate::feature_not_supported,
                         sqlstate::lock_not_available,
                         sqlstate::lease_not_held,
                         sqlstate::out_of_memory,
                         sqlstate::internal_error};
  const char* expected[] = {"22004", "22023", "0A000", "55P03",
                            "LD002", "53200", "XX000"};
  for (std::size_t i = 0; i < sizeof codes / sizeof codes[0]; ++i) {
    EXPECT_STREQ(Error(codes[i], "m").sqlstate(), expected[i]);
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

}  // namespace
}  // namespace dlock
