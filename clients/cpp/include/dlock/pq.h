// A small RAII wrapper over libpq, the base of dlock's C++ client library
// (lease.h, keeper.h), the demo, the tests and the dlock command.
//
// One Connection per thread or process (libpq connections must not be
// shared). Queries go through PQexecParams with text parameters, so values
// are never spliced into SQL. Failures throw Error unless the caller uses
// try_exec(), which hands back the failed Result for inspection: tests
// expect some errors (e.g. 55P03 from dlock.acquire) and want to look at
// the SQLSTATE without paying for an exception.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace dlock::pq {

// A failed connection or statement. sqlstate() is the server's SQLSTATE,
// or empty when libpq itself failed (e.g. the connection was lost).
class Error : public std::runtime_error {
 public:
  Error(std::string sqlstate, const std::string& message,
        std::string detail = "")
      : std::runtime_error(message),
        sqlstate_(std::move(sqlstate)),
        detail_(std::move(detail)) {}

  const std::string& sqlstate() const noexcept { return sqlstate_; }
  // The server's DETAIL, "" if none.
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::string sqlstate_;
  std::string detail_;
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
  // The server's primary message alone (no severity, no DETAIL); error()
  // when the server sent none.
  std::string message() const;
  // The DETAIL of a failed statement, "" if none.
  std::string detail() const;
  // Throws Error with this result's SQLSTATE, message() and detail().
  [[noreturn]] void raise() const;

  int rows() const;
  std::string column_name(int col) const;
  int cols() const;
  bool isnull(int row, int col) const;
  // The text of a field; "" for NULL (check isnull() when it matters).
  std::string value(int row, int col) const;
  // Typed readers for the common cases; they throw Error on NULL or on
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
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
Param to_param(T v) {
  return std::to_string(v);
}
template <typename T>
Param to_param(const std::optional<T>& v) {
  return v ? to_param(*v) : std::nullopt;
}

// A NOTIFY the connection received.
struct Notification {
  std::string channel;
  std::string payload;
};

// A NOTICE or WARNING the server sent while a statement ran. message and
// detail follow the server's lc_messages; severity, sqlstate and
// source_function do not.
struct Notice {
  // WARNING, NOTICE, ... (never translated).
  std::string severity;
  std::string sqlstate;
  // The primary message, and the DETAIL ("" if none).
  std::string message;
  std::string detail;
  // The server's C function that raised it.
  std::string source_function;

  // True for the WARNING of a commit whose wait for the synchronous
  // standbys was cancelled (pg_cancel_backend; statement_timeout does not
  // end that wait): the transaction committed on this server, but may not
  // have reached a standby, and a failover may lose it.
  bool commit_not_replicated() const;
};

// Asked at least every 50 ms while an interruptible call waits for the
// server: false abandons the wait.
using KeepWaiting = std::function<bool()>;

class Connection {
 public:
  // An empty conninfo lets libpq take everything from the PG* environment
  // variables (PGHOST, PGPORT, PGUSER, PGDATABASE, ...). Throws Error if
  // the connection fails.
  explicit Connection(const std::string& conninfo = "");
  // The same, naming the session fallback_application_name (as it shows in
  // pg_stat_activity) unless conninfo or PGAPPNAME names it.
  Connection(const std::string& conninfo,
             const std::string& fallback_application_name);
  ~Connection();

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;

  // Runs one statement with text parameters ($1, $2, ...); throws Error
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

  // Connects without blocking for more than 50 ms at a time: nullopt if
  // keep_waiting() said to stop first; throws Error (08001) on failure.
  // application_name is the session's unless conninfo or PGAPPNAME sets one.
  static std::optional<Connection> open_interruptible(
      const std::string& conninfo, const std::string& application_name,
      const KeepWaiting& keep_waiting);

  // As run() without throwing, but nullopt if keep_waiting() said to stop
  // before the answer came: the connection is then in an unknown state,
  // drop it.
  std::optional<Result> run_interruptible(const std::string& sql,
                                          const std::vector<Param>& params,
                                          const KeepWaiting& keep_waiting);

  // Waits up to `wait` for the server to send something, then returns the
  // notifications received so far. Throws Error (08006) if the
  // connection is broken.
  std::vector<Notification> notifications(std::chrono::milliseconds wait);

  // Drops the server's notices and asynchronous messages instead of
  // printing them on stderr (libpq's default), for background work.
  void silence_notices();

  // The notices the server sent during the last statement (exec, try_exec,
  // run, run_interruptible), whether printed or silenced.
  const std::vector<Notice>& notices() const;
  // The first of them that says the statement's commit was not confirmed
  // by the synchronous standbys (Notice::commit_not_replicated), if any.
  std::optional<Notice> commit_not_replicated() const;

  // False once the connection is broken.
  bool ok() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }

  // The server process serving this connection (for pg_stat_activity).
  int backend_pid() const;
  PGconn* get() const { return conn_; }

 private:
  explicit Connection(PGconn* conn);
  // Throws Error unless the connection is up (closing it first).
  void check_connected();
  void close() noexcept;
  // Starts recording the notices of a new statement.
  void begin_statement();

  // What the notice receiver writes; on the heap, so that its address,
  // which libpq keeps, survives a move.
  struct NoticeLog;
  PGconn* conn_ = nullptr;
  std::unique_ptr<NoticeLog> log_;
};

}  // namespace dlock::pq
