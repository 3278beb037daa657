// The wall between C++ and PostgreSQL.
//
// 1. Every SQL-callable function is defined with DLOCK_FUNCTION. Its body
//    runs inside try/catch; a C++ exception becomes ereport(ERROR) with its
//    SQLSTATE, message, detail and hint, raised only after the catch block
//    has ended, so no exception object is alive when PostgreSQL longjmps.
// 2. A frame that owns a C++ object with a non-trivial destructor calls
//    PostgreSQL only through pg_guard(): the call runs under PG_TRY, and a
//    PostgreSQL error comes back as dlock::PgError, which the entry point
//    re-raises untouched (SQLSTATE, detail, hint and all). Frames that own
//    no such object (the usual glue) may call PostgreSQL directly: a longjmp
//    through them skips nothing.
// 3. A callable given to pg_guard() must not throw: it is invoked through a
//    noexcept wrapper, so a C++ exception inside PG_TRY terminates instead of
//    leaving PostgreSQL's error stack pointing at a dead frame.
#pragma once

#include "pg_glue.h"

namespace dlock {

// A PostgreSQL error caught by pg_guard(), carried through C++ frames.
class PgError {
 public:
  explicit PgError(ErrorData* data) : data_(data) {}
  ErrorData* data() const noexcept { return data_; }

 private:
  ErrorData* data_;  // palloc'd copy, owned by the current memory context
};

namespace detail {

template <typename F>
void invoke_noexcept(F& f) noexcept {
  f();
}

// Runs f under PG_TRY; returns the copied error, or NULL. Plain frame.
template <typename F>
ErrorData* run_guarded(F& f) {
  MemoryContext caller_cxt = CurrentMemoryContext;
  ErrorData* volatile caught = nullptr;
  PG_TRY();
  {
    invoke_noexcept(f);
  }
  PG_CATCH();
  {
    MemoryContextSwitchTo(caller_cxt);
    caught = CopyErrorData();
    FlushErrorState();
  }
  PG_END_TRY();
  return caught;
}

}  // namespace detail

// Calls f(), which may ereport, from a frame that owns C++ objects. A
// PostgreSQL error comes back as a thrown PgError.
template <typename F>
auto pg_guard(F&& f) -> decltype(f()) {
  using Result = decltype(f());
  if constexpr (std::is_void_v<Result>) {
    if (ErrorData* e = detail::run_guarded(f)) throw PgError(e);
  } else {
    static_assert(std::is_trivially_copyable_v<Result>,
                  "pg_guard returns plain values only");
    Result result{};
    auto store = [&]() { result = f(); };
    if (ErrorData* e = detail::run_guarded(store)) throw PgError(e);
    return result;
  }
}

// What the entry point's catch blocks keep of an exception: fixed buffers,
// so that copying it allocates nothing while the exception is alive.
struct CaughtError {
  ErrorData* pg_error = nullptr;  // set for PgError: re-raised as is
  char sqlstate[6] = {0};
  char message[512] = {0};
  char detail[1024] = {0};
  char hint[512] = {0};
};

// Fills `out` from the exception being handled. Call only inside a catch.
void capture_current_exception(CaughtError* out) noexcept;

// Raises `err` as a PostgreSQL ERROR. Never returns.
[[noreturn]] void raise_caught(const CaughtError* err);

}  // namespace dlock

// Defines SQL-callable function `fn` (C symbol, prefix dlock_). The body
// that follows is the implementation: DLOCK_FUNCTION(dlock_x) { ... }
#define DLOCK_FUNCTION(fn)                                  \
  static Datum fn##_body(FunctionCallInfo fcinfo);          \
  extern "C" {                                              \
  PG_FUNCTION_INFO_V1(fn);                                  \
  Datum fn(PG_FUNCTION_ARGS) {                              \
    ::dlock::CaughtError caught_;                           \
    try {                                                   \
      return fn##_body(fcinfo);                             \
    } catch (...) {                                         \
      ::dlock::capture_current_exception(&caught_);         \
    }                                                       \
    ::dlock::raise_caught(&caught_);                        \
  }                                                         \
  }                                                         \
  static Datum fn##_body(FunctionCallInfo fcinfo)
