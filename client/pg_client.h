// A small RAII wrapper over libpq: the start of dlock's C++ client
// library, used by the demo and the libpq stress tests.
//
// One Connection per thread or process (libpq connections must not be
// shared). Queries go through PQexecParams with text parameters, so values
// are never spliced into SQL. Failures throw PgError unless the caller uses
// try_exec(), which hands back the failed Result for inspection: tests
// expect some errors (e.g. 55P03 from dlock.acquire) and want to look at
// the SQLSTATE without paying for an exception.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace pgc {

// A failed connection or statement. sqlstate() is the server's SQLSTATE,
// or empty when libpq itself failed (e.g. the connection was lost).
class PgError : public std::runtime_error {
 public:
  PgError(std::string sqlstate, const std::string& message)
      : std::runtime_error(message), sqlstate_(std::move(sqlstate)) {}

  const std::string& sqlstate() const noexcept { return sqlstate_; }

 private:
  std::string sqlstate_;
};

// Owns one PGresult. A Result whose statement failed is !ok(); its
// sqlstate() and error() say why.
class Result {
 public:
  Result() = default;
  // Takes ownership of res (may be null: libpq could not even build a
  // result); fallback_error is used as the message in that case.
  Result(PGresult* res, std::string fallback_error);
  ~Result();

  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result(Result&& other) noexcept;
  Result& operator=(Result&& other) noexcept;

  // True for PGRES_COMMAND_OK and PGRES_TUPLES_OK.
  bool ok() const;
  std::string sqlstate() const;
  std::string error() const;

  int rows() const;
  int cols() const;
  bool isnull(int row, int col) const;
  // The text of a field; "" for NULL (check isnull() when it matters).
  std::string value(int row, int col) const;
  // Typed readers for the common cases; they throw PgError on NULL or on
  // text that is not a whole number or a boolean.
  std::int64_t int64(int row, int col) const;
  bool boolean(int row, int col) const;
  // Rows affected by INSERT/UPDATE/DELETE, 0 for other commands.
  std::int64_t affected() const;

  PGresult* get() const { return res_; }

 private:
  void check_field(int row, int col) const;

  PGresult* res_ = nullptr;
  std::string fallback_error_;
};

// A query parameter in text form; nullopt is SQL NULL.
using Param = std::optional<std::string>;

// Conversions from the argument types callers use to Param.
inline Param to_param(std::nullopt_t) { return std::nullopt; }
inline Param to_param(const std::string& s) { return s; }
inline Param to_param(std::string_view s) { return std::string(s); }
inline Param to_param(const char* s) {
  return s ? Param(std::string(s)) : std::nullopt;
}
inline Param to_param(bool b) { return std::string(b ? "true" : "false"); }
template <typename T,
          typename = std::enable_if_t<std::is_arithmetic_v<T>>>
Param to_param(T v) {
  return std::to_string(v);
}
template <typename T>
Param to_param(const std::optional<T>& v) {
  return v ? to_param(*v) : std::nullopt;
}

class Connection {
 public:
  // An empty conninfo lets libpq take everything from the PG* environment
  // variables (PGHOST, PGPORT, PGUSER, PGDATABASE, ...). Throws PgError if
  // the connection fails.
  explicit Connection(const std::string& conninfo = "");
  ~Connection();

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;

  // Runs one statement with text parameters ($1, $2, ...); throws PgError
  // if it fails.
  template <typename... Args>
  Result exec(const std::string& sql, const Args&... args) {
    return run(sql, {to_param(args)...}, true);
  }

  // As exec(), but a failure comes back as a Result that is !ok().
  template <typename... Args>
  Result try_exec(const std::string& sql, const Args&... args) {
    return run(sql, {to_param(args)...}, false);
  }

  Result run(const std::string& sql, const std::vector<Param>& params,
             bool throw_on_error);

  // The server process serving this connection (for pg_stat_activity).
  int backend_pid() const;
  PGconn* get() const { return conn_; }

 private:
  void close() noexcept;

  PGconn* conn_ = nullptr;
};

}  // namespace pgc
