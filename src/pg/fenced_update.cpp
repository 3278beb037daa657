// dlock.fenced_update(): one UPDATE that storage refuses for a stale token,
// checked in the writer's own transaction, so a holder that paused past
// its lease cannot land a write after a newer holder's.
#include <vector>

#include "../core/errors.h"
#include "../core/fenced_update_sql.h"
#include "../core/tokens.h"

#include "args.h"
#include "boundary.h"
#include "fence_target.h"
#include "spi.h"
#include "tokens.h"

namespace dlock::pg {
namespace {

// The keys of a JSON object, in order; 22023 if it is not an object.
List* object_keys(Jsonb* json, const char* what) {
  if (!JB_ROOT_IS_OBJECT(json)) {
    throw_error(sqlstate::invalid_parameter_value,
                psprintf("%s must be a JSON object", what));
  }
  List* keys = NIL;
  JsonbIterator* it = JsonbIteratorInit(&json->root);
  JsonbValue v;
  JsonbIteratorToken tok;
  int depth = 0;
  while ((tok = JsonbIteratorNext(&it, &v, depth > 0)) != WJB_DONE) {
    if (tok == WJB_BEGIN_OBJECT || tok == WJB_BEGIN_ARRAY) ++depth;
    if (tok == WJB_END_OBJECT || tok == WJB_END_ARRAY) --depth;
    if (tok == WJB_KEY && depth == 1) {
      keys = lappend(keys, pnstrdup(v.val.string.val, v.val.string.len));
    }
  }
  return keys;
}

bool value_is_null(Jsonb* json, const char* key) {
  JsonbValue k;
  k.type = jbvString;
  k.val.string.val = const_cast<char*>(key);
  k.val.string.len = static_cast<int>(strlen(key));
  JsonbValue* v = findJsonbValueFromContainer(&json->root, JB_FOBJECT, &k);
  return v != nullptr && v->type == jbvNull;
}

// A user column of the target that a fenced write may name: 42703 for an
// unknown or dropped column, 428C9 for a system or generated one.
Form_pg_attribute writable_column(Relation rel, const char* column,
                                  bool assigned) {
  AttrNumber attnum = get_attnum(RelationGetRelid(rel), column);
  if (attnum == InvalidAttrNumber) {
    throw_error(sqlstate::undefined_column,
                psprintf("column \"%s\" of relation \"%s\" does not exist",
                         column, RelationGetRelationName(rel)));
  }
  if (attnum < 0) {
    throw_error(
        sqlstate::generated_always,
        psprintf("cannot use system column \"%s\" in a fenced update", column));
  }
  Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
  if (assigned && att->attgenerated) {
    throw_error(sqlstate::generated_always,
                psprintf("column \"%s\" is a generated column and cannot be "
                         "changed",
                         column));
  }
  return att;
}

// OPERATOR(schema.=) of the column type's default equality, so that the
// caller's search_path cannot substitute another operator. palloc'd.
const char* equality_operator(Oid type, const char* column) {
  TypeCacheEntry* entry = lookup_type_cache(type, TYPECACHE_EQ_OPR);
  if (!OidIsValid(entry->eq_opr)) {
    throw_error(
        sqlstate::invalid_parameter_value,
        psprintf("column \"%s\" has no equality operator to match on", column));
  }
  HeapTuple tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(entry->eq_opr));
  if (!HeapTupleIsValid(tup)) {
    elog(ERROR, "dlock: operator %u is missing", entry->eq_opr);
  }
  Form_pg_operator op = reinterpret_cast<Form_pg_operator>(GETSTRUCT(tup));
  const char* result = psprintf(
      "OPERATOR(%s.%s)", quote_identifier(get_namespace_name(op->oprnamespace)),
      NameStr(op->oprname));
  ReleaseSysCache(tup);
  return result;
}

// The column's type as SQL, schema-qualified so that search_path cannot
// change it, with its typmod (varchar(10), numeric(8,2), ...).
const char* qualified_type(Form_pg_attribute att) {
  return format_type_extended(
      att->atttypid, att->atttypmod,
      FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
}

// One column of changes or match, as the plain glue frames collect it.
struct ColumnSpec {
  const char* column;    // quoted
  const char* type;      // schema-qualified, with typmod
  const char* equality;  // match only: OPERATOR(schema.=)
  bool is_null;          // match only
};
DLOCK_PLAIN_STRUCT(ColumnSpec);

struct SqlText {
  char* update;
  char* higher;
};
DLOCK_PLAIN_STRUCT(SqlText);

// Builds the statements with src/core. This frame owns C++ containers, so
// its PostgreSQL calls (pstrdup) go through pg_guard.
SqlText build_sql(const char* target, const char* fence_column,
                  const ColumnSpec* set, int n_set, const ColumnSpec* match,
                  int n_match) {
  auto columns = [](const ColumnSpec* specs, int n) {
    std::vector<FencedColumn> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(FencedColumn{specs[i].column, specs[i].type,
                                 specs[i].equality ? specs[i].equality : "",
                                 specs[i].is_null});
    }
    return out;
  };
  FencedUpdateSql sql = dlock::build_fenced_update(
      target, fence_column, columns(set, n_set), columns(match, n_match));
  SqlText out;
  out.update = pg_guard([&]() { return pstrdup(sql.update.c_str()); });
  out.higher = pg_guard([&]() { return pstrdup(sql.higher.c_str()); });
  return out;
}

// Runs one of the statements as the caller; with `highest`, reads the
// count and highest fence it selects.
int64 run_counted(const char* sql, Datum* args, int64* highest) {
  Oid types[3] = {INT8OID, JSONBOID, JSONBOID};
  uint64 rows = run_statement(sql, 3, types, args);
  if (highest == nullptr) return static_cast<int64>(rows);
  bool count_null;
  bool max_null;
  int64 count = DatumGetInt64(result_value(0, 1, &count_null));
  Datum max = result_value(0, 2, &max_null);
  *highest = max_null ? 0 : DatumGetInt64(max);
  return count;
}

}  // namespace

// dlock.fenced_update(target regclass, token bigint, changes jsonb,
//                     match jsonb, fence_column name) RETURNS bigint
DLOCK_FUNCTION(dlock_fenced_update) {
  require(fcinfo, 0, "target");
  int64 token = required_token(fcinfo, 1);
  require(fcinfo, 2, "changes");
  require(fcinfo, 3, "match");
  require(fcinfo, 4, "fence_column");
  Oid target = PG_GETARG_OID(0);
  Jsonb* changes = PG_GETARG_JSONB_P(2);
  Jsonb* match = PG_GETARG_JSONB_P(3);
  const char* fence = NameStr(*PG_GETARG_NAME(4));

  dlock::check_token_issued(token, last_issued_token());

  // Identifiers are checked against the catalog, then quoted; values stay
  // in the jsonb parameters.
  Relation rel = open_target(target, AccessShareLock);
  if (rel->rd_rel->relkind != RELKIND_RELATION &&
      rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE) {
    throw_error(
        sqlstate::invalid_parameter_value,
        psprintf("\"%s\" is not a table", RelationGetRelationName(rel)));
  }
  writable_column(rel, fence, true);
  fence_column(rel, fence);

  List* set_keys = object_keys(changes, "changes");
  List* match_keys = object_keys(match, "match");
  ColumnSpec* set_specs = static_cast<ColumnSpec*>(
      palloc0(sizeof(ColumnSpec) * (list_length(set_keys) + 1)));
  ColumnSpec* match_specs = static_cast<ColumnSpec*>(
      palloc0(sizeof(ColumnSpec) * (list_length(match_keys) + 1)));
  int n_set = 0;
  int n_match = 0;
  ListCell* lc;
  foreach (lc, set_keys) {
    const char* column = static_cast<const char*>(lfirst(lc));
    if (strcmp(column, fence) == 0) {
      throw_error(sqlstate::invalid_parameter_value,
                  "changes must not set the fence column",
                  psprintf("dlock sets \"%s\" to the token.", fence));
    }
    Form_pg_attribute att = writable_column(rel, column, true);
    set_specs[n_set++] = ColumnSpec{pstrdup(quote_identifier(column)),
                                    qualified_type(att), nullptr, false};
  }
  foreach (lc, match_keys) {
    const char* column = static_cast<const char*>(lfirst(lc));
    Form_pg_attribute att = writable_column(rel, column, false);
    match_specs[n_match++] = ColumnSpec{
        pstrdup(quote_identifier(column)), qualified_type(att),
        equality_operator(att->atttypid, column), value_is_null(match, column)};
  }
  const char* qualified = qualified_name(rel);
  table_close(rel, NoLock);

  SqlText sql = build_sql(qualified, quote_identifier(fence), set_specs, n_set,
                          match_specs, n_match);

  // Runs as the caller: GRANTs and row-level security apply.
  Datum args[3] = {Int64GetDatum(token), JsonbPGetDatum(changes),
                   JsonbPGetDatum(match)};
  spi_connect();
  int64 updated = run_counted(sql.update, args, nullptr);
  // Any matching row a newer holder wrote makes the whole write stale: the
  // error also undoes the rows this UPDATE did change.
  int64 highest = 0;
  int64 newer_rows = run_counted(sql.higher, args, &highest);
  SPI_finish();
  if (newer_rows > 0) {
    throw_error(sqlstate::stale_token,
                psprintf("fencing token %lld is stale for %s",
                         static_cast<long long>(token), qualified),
                psprintf("%lld matching row(s) carry a higher fence; the "
                         "highest is %lld.",
                         static_cast<long long>(newer_rows),
                         static_cast<long long>(highest)),
                "Stop writing: a newer holder has written these rows.");
  }
  PG_RETURN_INT64(updated);
}

}  // namespace dlock::pg
