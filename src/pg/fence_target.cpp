#include "../core/errors.h"

#include "fence_target.h"
#include "boundary.h"

namespace dlock::pg {

namespace {

// 42P01 for a relation that does not exist (kind '\0'), 42809 for an
// index or a composite type.
void check_target(Oid relid, char kind, const char* name) {
  if (kind == '\0') {
    throw_error(sqlstate::undefined_table,
                psprintf("relation with OID %u does not exist", relid));
  }
  if (kind == RELKIND_INDEX || kind == RELKIND_PARTITIONED_INDEX ||
      kind == RELKIND_COMPOSITE_TYPE) {
    throw_error(sqlstate::wrong_object_type,
                psprintf("\"%s\" is %s", name,
                         kind == RELKIND_COMPOSITE_TYPE ? "a composite type"
                                                        : "an index"));
  }
}

}  // namespace

Relation open_target(Oid relid, LOCKMODE mode) {
  Relation rel = try_relation_open(relid, mode);
  check_target(relid, rel ? rel->rd_rel->relkind : '\0',
               rel ? RelationGetRelationName(rel) : nullptr);
  return rel;
}

const char* target_name(Oid relid) {
  const char* name = get_rel_name(relid);
  check_target(relid, name ? get_rel_relkind(relid) : '\0', name);
  return quote_qualified_identifier(
      get_namespace_name(get_rel_namespace(relid)), name);
}

const char* qualified_name(Relation rel) {
  return quote_qualified_identifier(
      get_namespace_name(RelationGetNamespace(rel)),
      RelationGetRelationName(rel));
}

AttrNumber fence_column(Relation rel, const char* column) {
  int attnum = SPI_fnumber(RelationGetDescr(rel), column);
  if (attnum <= 0) {
    throw_error(sqlstate::undefined_column,
                psprintf("column \"%s\" of relation \"%s\" does not exist",
                         column, RelationGetRelationName(rel)));
  }
  Oid type = TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid;
  if (type != INT8OID) {
    throw_error(sqlstate::datatype_mismatch,
                psprintf("fence column \"%s\" must be of type bigint", column),
                psprintf("It is of type %s.", format_type_be(type)));
  }
  return static_cast<AttrNumber>(attnum);
}

}  // namespace dlock::pg
