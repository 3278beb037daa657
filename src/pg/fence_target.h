// The table a fenced write or protect() names, and its fence column. The
// rule "a fence column is an existing bigint column" has its home here.
#pragma once

#include "boundary.h"

namespace dlock::pg {

// Opens relation `relid` with `mode`, as table_open() would: 42P01 if no
// relation has that OID (0, or one dropped since the regclass was made),
// 42809 for an index or a composite type.
Relation open_target(Oid relid, LOCKMODE mode);

// The same checks without opening or locking anything, for a statement
// that takes its own locks after its own privilege checks; returns the
// relation's schema-qualified, quoted name.
const char* target_name(Oid relid);

// Schema-qualified, quoted name of an open relation.
const char* qualified_name(Relation rel);

// The fence column's attribute number: a user column of rel (42703
// otherwise) of type bigint (42804 otherwise). Runs for every row the
// protect trigger sees, so it reads the tuple descriptor, not the catalog.
AttrNumber fence_column(Relation rel, const char* column);

}  // namespace dlock::pg
