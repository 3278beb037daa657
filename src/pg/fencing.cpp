// Fenced writes: dlock.fenced_update(), dlock.fence() and the trigger
// installed by dlock.protect(). Storage checks the token at write time, in
// the writer's own transaction, so a holder that paused past its lease
// cannot land a write after a newer holder's.
#include <string>
#include <vector>

#include "../core/errors.h"
#include "../core/fencing.h"
#include "../core/lease_rules.h"

// PostgreSQL headers only after the core ones.
#include "args.h"
#include "boundary.h"
#include "lease_store.h"

namespace dlock {
namespace {

// The keys of a JSON object, in order; throws 22023 if it is not an object.
List* object_keys(Jsonb* json, const char* what) {
  if (!JB_ROOT_IS_OBJECT(json)) {
    throw Error(sqlstate::invalid_parameter_value,
                std::string(what) + " must be a JSON object");
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

// A user column of the target that a fenced write may name: throws 42703
// for an unknown or dropped column, 428C9 for a system or generated one.
Form_pg_attribute writable_column(Relation rel, const char* column,
                                  bool assigned) {
  AttrNumber attnum = get_attnum(RelationGetRelid(rel), column);
  if (attnum == InvalidAttrNumber) {
    throw Error(sqlstate::undefined_column,
                std::string("column \"") + column + "\" of relation \"" +
                    RelationGetRelationName(rel) + "\" does not exist");
  }
  if (attnum < 0) {
    throw Error(sqlstate::generated_always,
                std::string("cannot use system column \"") + column +
                    "\" in a fenced update");
  }
  Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
  if (assigned && att->attgenerated) {
    throw Error(sqlstate::generated_always,
                std::string("column \"") + column +
                    "\" is a generated column and cannot be changed");
  }
  return att;
}

// OPERATOR(schema.=) of the column type's default equality, so that the
// caller's search_path cannot substitute another operator. palloc'd.
const char* equality_operator(Oid type, const char* column) {
  TypeCacheEntry* entry = lookup_type_cache(type, TYPECACHE_EQ_OPR);
  if (!OidIsValid(entry->eq_opr)) {
    throw Error(sqlstate::invalid_parameter_value,
                std::string("column \"") + column +
                    "\" has no equality operator to match on");
  }
  HeapTuple tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(entry->eq_opr));
  if (!HeapTupleIsValid(tup)) elog(ERROR, "dlock: operator %u is missing", entry->eq_opr);
  Form_pg_operator op = reinterpret_cast<Form_pg_operator>(GETSTRUCT(tup));
  const char* result =
      psprintf("OPERATOR(%s.%s)", quote_identifier(get_namespace_name(op->oprnamespace)),
               NameStr(op->oprname));
  ReleaseSysCache(tup);
  return result;
}

// One column of changes or match, as the plain glue frames collect it.
struct ColumnSpec {
  const char* column;    // quoted
  const char* type;      // schema-qualified, with typmod
  const char* equality;  // match only: OPERATOR(schema.=)
  bool is_null;          // match only
};

struct SqlText {
  char* update;
  char* higher;
};

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
  FencedUpdateSql sql = build_fenced_update(
      target, fence_column, columns(set, n_set), columns(match, n_match));
  SqlText out;
  out.update = pg_guard([&]() { return pstrdup(sql.update.c_str()); });
  out.higher = pg_guard([&]() { return pstrdup(sql.higher.c_str()); });
  return out;
}

// The column's type as SQL, schema-qualified so that search_path cannot
// change it, with its typmod (varchar(10), numeric(8,2), ...).
const char* qualified_type(Form_pg_attribute att) {
  return format_type_extended(att->atttypid, att->atttypmod,
                              FORMAT_TYPE_TYPEMOD_GIVEN |
                                  FORMAT_TYPE_FORCE_QUALIFY);
}

// The target's fence column: must exist and be bigint (42703, 42804).
void check_fence_column(Relation rel, const char* fence_column) {
  Form_pg_attribute att = writable_column(rel, fence_column, true);
  if (att->atttypid != INT8OID) {
    const char* type_name = format_type_be(att->atttypid);
    throw Error(sqlstate::datatype_mismatch,
                std::string("fence column \"") + fence_column +
                    "\" must be of type bigint",
                std::string("It is of type ") + type_name + ".");
  }
}

int64 run_counted(const char* sql, Datum* args, int64* highest) {
  Oid types[3] = {INT8OID, JSONBOID, JSONBOID};
  int rc = SPI_execute_with_args(sql, 3, types, args, nullptr, false, 0);
  if (rc < 0) {
    elog(ERROR, "dlock: fenced update failed: %s", SPI_result_code_string(rc));
  }
  if (highest == nullptr) return static_cast<int64>(SPI_processed);
  bool count_null;
  bool max_null;
  int64 count = DatumGetInt64(SPI_getbinval(
      SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &count_null));
  Datum max = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
                            &max_null);
  *highest = max_null ? 0 : DatumGetInt64(max);
  return count;
}

}  // namespace
}  // namespace dlock

using namespace dlock;

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
  const char* fence_column = NameStr(*PG_GETARG_NAME(4));

  check_token_issued(token, last_issued_token());

  // Identifiers are checked against the catalog, then quoted; values stay
  // in the jsonb parameters.
  Relation rel = table_open(target, AccessShareLock);
  if (rel->rd_rel->relkind != RELKIND_RELATION &&
      rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE) {
    throw Error(sqlstate::invalid_parameter_value,
                std::string("\"") + RelationGetRelationName(rel) +
                    "\" is not a table");
  }
  check_fence_column(rel, fence_column);

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
    if (strcmp(column, fence_column) == 0) {
      throw Error(sqlstate::invalid_parameter_value,
                  "changes must not set the fence column",
                  std::string("dlock sets \"") + fence_column +
                      "\" to the token.");
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
  const char* qualified = quote_qualified_identifier(
      get_namespace_name(RelationGetNamespace(rel)),
      RelationGetRelationName(rel));
  table_close(rel, NoLock);

  SqlText sql = build_sql(qualified, quote_identifier(fence_column), set_specs,
                          n_set, match_specs, n_match);

  // Runs as the caller: GRANTs and row-level security apply.
  Datum args[3] = {Int64GetDatum(token), JsonbPGetDatum(changes),
                   JsonbPGetDatum(match)};
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "dlock: SPI_connect failed");
  int64 updated = run_counted(sql.update, args, nullptr);
  // Any matching row a newer holder wrote makes the whole write stale: the
  // error also undoes the rows this UPDATE did change.
  int64 highest = 0;
  int64 newer_rows = run_counted(sql.higher, args, &highest);
  SPI_finish();
  if (newer_rows > 0) {
    throw Error(sqlstate::stale_token,
                std::string("fencing token ") + std::to_string(token) +
                    " is stale for " + qualified,
                std::to_string(newer_rows) +
                    " matching row(s) carry a higher fence; the highest is " +
                    std::to_string(highest) + ".",
                "Stop writing: a newer holder has written these rows.");
  }
  PG_RETURN_INT64(updated);
}

// dlock.fence(resource text, token bigint) RETURNS bigint
DLOCK_FUNCTION(dlock_fence) {
  const char* resource = required_text(fcinfo, 0, "resource");
  check_name(resource, "resource");
  int64 token = required_token(fcinfo, 1);
  check_token_issued(token, last_issued_token());
  Writer w = open_writer();
  int64 highest;
  bool accepted = write_fence(resource, token, &highest);
  close_writer(w);
  if (!accepted) {
    throw Error(sqlstate::stale_token,
                std::string("fencing token ") + std::to_string(token) +
                    " is stale for resource \"" + resource + "\"",
                "The resource has accepted token " + std::to_string(highest) +
                    ".",
                "Stop writing: a newer holder has written this resource.");
  }
  PG_RETURN_INT64(token);
}

// Trigger installed by dlock.protect(): BEFORE INSERT OR UPDATE FOR EACH
// ROW, argument: the fence column. Refuses to lower a row's fence (LD001)
// and a fence dlock never issued (LD003); 0 means "not fenced yet".
DLOCK_FUNCTION(dlock_fence_guard) {
  if (!CALLED_AS_TRIGGER(fcinfo)) {
    throw Error(sqlstate::feature_not_supported,
                "dlock.fence_guard() must be called as a trigger");
  }
  TriggerData* trigger = reinterpret_cast<TriggerData*>(fcinfo->context);
  TriggerEvent event = trigger->tg_event;
  if (!TRIGGER_FIRED_BEFORE(event) || !TRIGGER_FIRED_FOR_ROW(event) ||
      TRIGGER_FIRED_BY_DELETE(event) || trigger->tg_trigger->tgnargs != 1) {
    throw Error(sqlstate::feature_not_supported,
                "dlock.fence_guard() must run BEFORE INSERT OR UPDATE FOR "
                "EACH ROW with the fence column as its argument");
  }
  const char* fence_column = trigger->tg_trigger->tgargs[0];
  TupleDesc desc = trigger->tg_relation->rd_att;
  int attnum = SPI_fnumber(desc, fence_column);
  if (attnum <= 0) {
    throw Error(sqlstate::undefined_column,
                std::string("fence column \"") + fence_column +
                    "\" does not exist");
  }
  Oid fence_type = TupleDescAttr(desc, attnum - 1)->atttypid;
  if (fence_type != INT8OID) {
    const char* type_name = format_type_be(fence_type);
    throw Error(sqlstate::datatype_mismatch,
                std::string("fence column \"") + fence_column +
                    "\" must be of type bigint",
                std::string("It is of type ") + type_name + ".");
  }
  bool is_update = TRIGGER_FIRED_BY_UPDATE(event);
  HeapTuple row = is_update ? trigger->tg_newtuple : trigger->tg_trigtuple;
  bool new_null;
  int64 fence = DatumGetInt64(heap_getattr(row, attnum, desc, &new_null));
  bool old_null = true;
  int64 old_fence = 0;
  if (is_update) {
    old_fence = DatumGetInt64(
        heap_getattr(trigger->tg_trigtuple, attnum, desc, &old_null));
  }
  if (!old_null && (new_null || fence < old_fence)) {
    throw Error(sqlstate::stale_token,
                std::string("fencing token ") +
                    (new_null ? std::string("NULL") : std::to_string(fence)) +
                    " is stale for a row of " +
                    RelationGetRelationName(trigger->tg_relation),
                "The row's fence is " + std::to_string(old_fence) + ".",
                "Stop writing: a newer holder has written this row.");
  }
  // 0 marks a row no holder has written yet (e.g. DEFAULT 0).
  if (!new_null && fence != 0 && (old_null || fence != old_fence)) {
    check_token_issued(fence, last_issued_token());
  }
  return PointerGetDatum(row);
}
