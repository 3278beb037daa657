#include <cstddef>
#include <exception>
#include <new>

#include "../core/errors.h"

#include "boundary.h"

namespace dlock::pg {

namespace {

// Copies src into dst, cut at a character boundary of the database
// encoding when it does not fit: a cut inside a multibyte character would
// make the whole message unconvertible for a client in another encoding.
void copy_text(char* dst, std::size_t size, const char* src) noexcept {
  if (src == nullptr) {
    dst[0] = '\0';
    return;
  }
  int len = static_cast<int>(strlen(src));
  if (static_cast<std::size_t>(len) >= size) {
    len = pg_mbcliplen(src, len, static_cast<int>(size) - 1);
  }
  memcpy(dst, src, len);
  dst[len] = '\0';
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
  ereport(ERROR, (errcode(sqlstate_code(err->sqlstate)),
                  errmsg_internal("%s", err->message),
                  err->detail[0] ? errdetail_internal("%s", err->detail) : 0,
                  err->hint[0] ? errhint("%s", err->hint) : 0));
  pg_unreachable();
}

void throw_error(const char* sqlstate, const char* message, const char* detail,
                 const char* hint) {
  throw Error(sqlstate, message, detail ? detail : "", hint ? hint : "");
}

}  // namespace dlock::pg
