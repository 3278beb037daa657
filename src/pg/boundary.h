// The wall between C++ and PostgreSQL.
//
// 1. Every SQL-callable function is defined with DLOCK_FUNCTION. Its body
//    runs inside try/catch; a C++ exception becomes ereport(ERROR) with its
//    SQLSTATE, message, detail and hint, raised only after the catch block
//    has ended, so no exception object is alive when PostgreSQL longjmps.
// 2. A frame that owns a C++ object with a non-trivial destructor calls
//    PostgreSQL only through pg_guard(): the call runs under PG_TRY, and a
//    PostgreSQL error comes back as PgError, which the entry point re-raises
//    untouched (SQLSTATE, detail, hint and all). Frames that own no such
//    object (the usual glue) may call PostgreSQL directly: a longjmp
//    through them skips nothing. Glue structs say so with
//    DLOCK_PLAIN_STRUCT; scripts/check-boundary finds owning std:: types in
//    src/pg outside the few frames allowed to have them.
// 3. A callable run under PG_TRY must not throw: pg_guard() invokes it
//    through a noexcept wrapper, so a C++ exception there terminates instead
//    of leaving PostgreSQL's error stack pointing at a dead frame.
// 4. A function PostgreSQL calls back (a *_hook, a registered callback, a
//    GUC hook) is defined inside extern "C" { static ... }: C linkage, as
//    PostgreSQL's function pointers expect, and static, so that its plain
//    C name is not exported where another library's could take its place.
//    scripts/check-boundary.sh checks the linkage.
#pragma once

#include <type_traits>

// Glue headers include PostgreSQL's headers through this one, so that the
// C++ headers the wall needs always come first.
#include "pg_headers.h"
// The differences between PostgreSQL majors, after the headers it needs.
#include "compat.h"

// A glue struct lives in frames that PostgreSQL may longjmp through.
#define DLOCK_PLAIN_STRUCT(type)                        \
  static_assert(std::is_trivially_destructible_v<type>, \
                #type " must be trivially destructible")

namespace dlock::pg {

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
  { invoke_noexcept(f); }
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
// so that copying it allocates nothing while the exception is alive. Texts
// longer than a buffer are cut at a character boundary.
struct CaughtError {
  ErrorData* pg_error = nullptr;  // set for PgError: re-raised as is
  char sqlstate[6] = {0};
  char message[512] = {0};
  char detail[1024] = {0};
  char hint[512] = {0};
};
DLOCK_PLAIN_STRUCT(CaughtError);

// Fills `out` from the exception being handled. Call only inside a catch.
void capture_current_exception(CaughtError* out) noexcept;

// Raises `err` as a PostgreSQL ERROR. Never returns.
[[noreturn]] void raise_caught(const CaughtError* err);

// Throws dlock::Error from plain strings (detail and hint may be NULL).
// Glue computes every text (psprintf) before the call, so that no C++
// object is alive while a PostgreSQL call may fail.
[[noreturn]] void throw_error(const char* sqlstate, const char* message,
                              const char* detail = nullptr,
                              const char* hint = nullptr);

}  // namespace dlock::pg

// Defines SQL-callable function `fn` (C symbol, prefix dlock_). The body
// that follows is the implementation: DLOCK_FUNCTION(dlock_x) { ... }. It
// may stand inside namespace dlock::pg: the symbol keeps C linkage.
#define DLOCK_FUNCTION(fn)                              \
  static Datum fn##_body(FunctionCallInfo fcinfo);      \
  extern "C" {                                          \
  PG_FUNCTION_INFO_V1(fn);                              \
  Datum fn(PG_FUNCTION_ARGS) {                          \
    ::dlock::pg::CaughtError caught_;                   \
    try {                                               \
      return fn##_body(fcinfo);                         \
    } catch (...) {                                     \
      ::dlock::pg::capture_current_exception(&caught_); \
    }                                                   \
    ::dlock::pg::raise_caught(&caught_);                \
  }                                                     \
  }                                                     \
  static Datum fn##_body(FunctionCallInfo fcinfo)
