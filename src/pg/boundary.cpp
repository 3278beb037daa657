// Core headers come before any PostgreSQL header (they refuse to follow one).
#include "../core/errors.h"

#include "boundary.h"

namespace dlock {

namespace {

void copy_text(char* dst, std::size_t size, const char* src) noexcept {
  if (src == nullptr) {
    dst[0] = '\0';
    return;
  }
  strlcpy(dst, src, size);
}

int sqlstate_code(const char* s) {
  return MAKE_SQLSTATE(s[0], s[1], s[2], s[3], s[4]);
}

}  // namespace

void capture_current_exception(CaughtError* out) noexcept {
  try {
    throw;
  } catch (const PgError& e) {
    out->pg_error = e.data();
  } catch (const Error& e) {
    copy_text(out->sqlstate, sizeof out->sqlstate, e.sqlstate());
    copy_text(out->message, sizeof out->message, e.what());
    copy_text(out->detail, sizeof out->detail, e.detail().c_str());
    copy_text(out->hint, sizeof out->hint, e.hint().c_str());
  } catch (const std::bad_alloc&) {
    copy_text(out->sqlstate, sizeof out->sqlstate, sqlstate::out_of_memory);
    copy_text(out->message, sizeof out->message, "out of memory in dlock");
  } catch (const std::exception& e) {
    copy_text(out->sqlstate, sizeof out->sqlstate, sqlstate::internal_error);
    copy_text(out->message, sizeof out->message, "internal error in dlock");
    copy_text(out->detail, sizeof out->detail, e.what());
  } catch (...) {
    copy_text(out->sqlstate, sizeof out->sqlstate, sqlstate::internal_error);
    copy_text(out->message, sizeof out->message,
              "internal error in dlock: unknown exception");
  }
}

void raise_caught(const CaughtError* err) {
  if (err->pg_error != nullptr) ReThrowError(err->pg_error);
  ereport(ERROR,
          (errcode(sqlstate_code(err->sqlstate)),
           errmsg_internal("%s", err->message),
           err->detail[0] ? errdetail_internal("%s", err->detail) : 0,
           err->hint[0] ? errhint("%s", err->hint) : 0));
  pg_unreachable();
}

}  // namespace dlock
