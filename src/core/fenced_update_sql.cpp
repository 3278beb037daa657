#include "fenced_update_sql.h"

#include "errors.h"

namespace dlock {

namespace {

// "jsonb_to_record($n) AS alias(col type, ...)"
std::string record_of(const char* param, const char* alias,
                      const std::vector<FencedColumn>& columns) {
  std::string sql = std::string("pg_catalog.jsonb_to_record(") + param +
                    ") AS " + alias + "(";
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) sql += ", ";
    sql += columns[i].column + " " + columns[i].type;
  }
  return sql + ")";
}

}  // namespace

FencedUpdateSql build_fenced_update(const std::string& target,
                                    const std::string& fence_column,
                                    const std::vector<FencedColumn>& changes,
                                    const std::vector<FencedColumn>& match) {
  if (changes.empty()) {
    throw Error(sqlstate::invalid_parameter_value,
                "changes must name at least one column");
  }
  if (match.empty()) {
    throw Error(sqlstate::invalid_parameter_value,
                "match must name at least one column", {},
                "An empty match would update every row of the table.");
  }
  const std::string fence = "t." + fence_column;
  const std::string match_values = record_of("$3", "m", match);
  std::string where;
  for (const FencedColumn& col : match) {
    where += where.empty() ? " WHERE " : " AND ";
    where += col.is_null
                 ? "t." + col.column + " IS NULL"
                 : "t." + col.column + " " + col.equality + " m." + col.column;
  }

  FencedUpdateSql sql;
  sql.update = "UPDATE " + target + " AS t SET ";
  for (const FencedColumn& col : changes) {
    sql.update += col.column + " = c." + col.column + ", ";
  }
  sql.update += fence_column + " = $1 FROM " + record_of("$2", "c", changes) +
                ", " + match_values + where + " AND (" + fence +
                " IS NULL OR " + fence + " OPERATOR(pg_catalog.<=) $1)";
  sql.higher = "SELECT pg_catalog.count(*), pg_catalog.max(" + fence +
               ") FROM " + target + " AS t, " + match_values + where + " AND " +
               fence + " OPERATOR(pg_catalog.>) $1";
  return sql;
}

}  // namespace dlock
