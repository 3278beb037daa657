// Unit tests of src/core/fenced_update_sql: the statements of
// dlock.fenced_update().
#include "fenced_update_sql.h"

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

FencedColumn column(const char* name, const char* type) {
  return FencedColumn{name, type, "", false};
}

FencedColumn match_on(const char* name, const char* type, bool is_null) {
  return FencedColumn{name, type, "OPERATOR(pg_catalog.=)", is_null};
}

TEST(BuildFencedUpdate, OneStatementWithTypedBoundValues) {
  FencedUpdateSql sql =
      build_fenced_update("public.accounts", "fence_token",
                          {column("balance", "numeric(8,2)"),
                           column("\"Note\"", "pg_catalog.text")},
                          {match_on("id", "integer", false),
                           match_on("region", "pg_catalog.text", true)});
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

}  // namespace
}  // namespace dlock
