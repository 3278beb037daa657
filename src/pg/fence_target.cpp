#include "fence_target.h"
#include "boundary.h"

namespace dlock::pg {

Relation open_target(Oid relid, LOCKMODE mode) {
  Relation rel = try_relation_open(relid, mode);
  if (rel == nullptr) {
    throw_error(sqlstate::undefined_table,
                psprintf("relation with OID %u does not exist", relid));
  }
  char kind = rel->rd_rel->relkind;
  if (kind == RELKIND_INDEX || kind == RELKIND_PARTITIONED_INDEX ||
      kind == RELKIND_COMPOSITE_TYPE) {
    throw_error(sqlstate::wrong_object_type,
                psprintf("\"%s\" is %s", RelationGetRelationName(rel),
                         kind == RELKIND_COMPOSITE_TYPE ? "a composite type"
                                                        : "an index"));
  }
  return rel;
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
