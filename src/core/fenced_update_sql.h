// The SQL text of dlock.fenced_update(), as a pure function. Identifiers
// arrive already quoted (PostgreSQL's quote_identifier()); values never
// appear in the text: they are bound as parameters.
#pragma once
#include "plain_cpp.h"

#include <string>
#include <vector>

namespace dlock {

// A column named in fenced_update()'s changes or match.
struct FencedColumn {
  std::string column;    // quoted identifier
  std::string type;      // its type, schema-qualified, with typmod
  std::string equality;  // match only: the type's equality, OPERATOR(s.=)
  bool is_null = false;  // match only: the value is JSON null: IS NULL
};

// The statements of one fenced_update() call; throws 22023 if changes or
// match is empty. Parameters: $1 token (bigint), $2 changes (jsonb), $3
// match (jsonb). Values reach the columns through jsonb_to_record() with
// the columns' own types, i.e. through the types' input functions.
struct FencedUpdateSql {
  std::string update;  // the UPDATE; its row count is the result
  std::string higher;  // count(*) and max(fence) of matching rows whose
                       // fence is above $1
};

FencedUpdateSql build_fenced_update(const std::string& target,
                                    const std::string& fence_column,
                                    const std::vector<FencedColumn>& changes,
                                    const std::vector<FencedColumn>& match);

}  // namespace dlock
