// Test-only functions (built with DLOCK_TESTING=1) that exercise the
// C++/PostgreSQL wall: a C++ exception and a PostgreSQL error raised inside
// pg_guard() must both reach the client with the right SQLSTATE, run the
// destructors of the C++ objects they unwind, and leave the backend usable.
#ifdef DLOCK_TESTING

#include <new>
#include <stdexcept>
#include <string>

#include "../core/errors.h"

#include "boundary.h"

namespace {

int destructors_run = 0;

// Owns a std::string, so its frame may call PostgreSQL only via pg_guard.
struct Tracker {
  std::string label{"tracked object with a destructor"};
  ~Tracker() { ++destructors_run; }
};

}  // namespace

// Throws dlock::Error with the given SQLSTATE, or a std:: exception when
// the argument is 'bad_alloc' or 'runtime_error'.
DLOCK_FUNCTION(dlock_test_throw) {
  const char* what = text_to_cstring(PG_GETARG_TEXT_PP(0));
  Tracker tracker;
  std::string kind(what);
  if (kind == "bad_alloc") throw std::bad_alloc();
  if (kind == "runtime_error") throw std::runtime_error("boom");
  throw dlock::Error(what, "test error from C++", "detail from C++",
                     "hint from C++");
}

// Raises a PostgreSQL error (division_by_zero, with detail and hint) inside
// pg_guard while a C++ object is alive.
DLOCK_FUNCTION(dlock_test_pg_error) {
  Tracker tracker;
  dlock::pg::pg_guard([]() {
    ereport(ERROR, (errcode(ERRCODE_DIVISION_BY_ZERO),
                    errmsg("test error from PostgreSQL"),
                    errdetail("detail from PostgreSQL"),
                    errhint("hint from PostgreSQL")));
  });
  PG_RETURN_VOID();
}

// A guarded call that succeeds returns its value.
DLOCK_FUNCTION(dlock_test_guarded_value) {
  Tracker tracker;
  int32 n = PG_GETARG_INT32(0);
  int32 doubled = dlock::pg::pg_guard([n]() {
    return DatumGetInt32(
        DirectFunctionCall2(int4pl, Int32GetDatum(n), Int32GetDatum(n)));
  });
  PG_RETURN_INT32(doubled);
}

DLOCK_FUNCTION(dlock_test_destructors_run) { PG_RETURN_INT32(destructors_run); }

#endif  // DLOCK_TESTING
