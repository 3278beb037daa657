#include <dlock/pq.h>

#include <poll.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace dlock::pq {

namespace {

// libpq's messages end with a newline; exceptions read better without it.
std::string trimmed(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// How long an interruptible call waits on the socket before it asks
// keep_waiting() again.
constexpr int kWaitSliceMs = 50;

// Waits until libpq's socket is readable (or writable) or timeout_ms
// passed; false only when the socket is gone.
bool wait_socket(PGconn* conn, bool for_write, int timeout_ms) {
  int fd = PQsocket(conn);
  if (fd < 0) return false;
  pollfd p{fd, static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
  int n;
  do {
    n = poll(&p, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  return n >= 0;
}

std::string field_of(const PGresult* res, int code) {
  const char* v = PQresultErrorField(res, code);
  return v ? v : "";
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

// ---------------------------------------------------------------- Notice

bool Notice::commit_not_replicated() const {
  if (severity != "WARNING") return false;
  // Only SyncRepWaitForLSN's cancelled waits raise a WARNING there, in any
  // lc_messages; the English texts cover a server where the function is
  // named otherwise.
  return source_function == "SyncRepWaitForLSN" ||
         starts_with(message, "canceling wait for synchronous replication") ||
         starts_with(message,
                     "canceling the wait for synchronous replication") ||
         starts_with(detail, "The transaction has already committed locally");
}

// ---------------------------------------------------------------- Result

Result::Result(PGresult* res, std::string fallback_error)
    : res_(res), fallback_error_(std::move(fallback_error)) {}

Result::~Result() {
  if (res_) PQclear(res_);
}

Result::Result(Result&& other) noexcept
    : res_(std::exchange(other.res_, nullptr)),
      fallback_error_(std::move(other.fallback_error_)) {}

Result& Result::operator=(Result&& other) noexcept {
  if (this != &other) {
    if (res_) PQclear(res_);
    res_ = std::exchange(other.res_, nullptr);
    fallback_error_ = std::move(other.fallback_error_);
  }
  return *this;
}

bool Result::ok() const {
  if (!res_) return false;
  ExecStatusType st = PQresultStatus(res_);
  return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

std::string Result::sqlstate() const {
  if (!res_) return "";
  const char* code = PQresultErrorField(res_, PG_DIAG_SQLSTATE);
  return code ? code : "";
}

std::string Result::error() const {
  if (!res_) return fallback_error_;
  std::string message = trimmed(PQresultErrorMessage(res_));
  return message.empty() ? fallback_error_ : message;
}

std::string Result::message() const {
  const char* m =
      res_ ? PQresultErrorField(res_, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  return m ? m : error();
}

std::string Result::detail() const {
  const char* d =
      res_ ? PQresultErrorField(res_, PG_DIAG_MESSAGE_DETAIL) : nullptr;
  return d ? d : "";
}

void Result::raise() const { throw Error(sqlstate(), message(), detail()); }

std::string Result::column_name(int col) const {
  const char* n = res_ ? PQfname(res_, col) : nullptr;
  return n ? n : "";
}

int Result::rows() const { return res_ ? PQntuples(res_) : 0; }

int Result::cols() const { return res_ ? PQnfields(res_) : 0; }

void Result::check_field(int row, int col) const {
  if (row < 0 || row >= rows() || col < 0 || col >= cols()) {
    throw Error("", "field (" + std::to_string(row) + ", " +
                        std::to_string(col) + ") is out of range");
  }
}

bool Result::isnull(int row, int col) const {
  check_field(row, col);
  return PQgetisnull(res_, row, col) == 1;
}

std::string Result::value(int row, int col) const {
  check_field(row, col);
  return PQgetvalue(res_, row, col);
}

std::int64_t Result::int64(int row, int col) const {
  if (isnull(row, col)) {
    throw Error("", "expected a number, got NULL in column " +
                        std::string(PQfname(res_, col)));
  }
  const char* text = PQgetvalue(res_, row, col);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') {
    throw Error("", "expected a whole number, got \"" + std::string(text) +
                        "\" in column " + PQfname(res_, col));
  }
  return v;
}

bool Result::boolean(int row, int col) const {
  if (isnull(row, col)) {
    throw Error("", "expected a boolean, got NULL in column " +
                        std::string(PQfname(res_, col)));
  }
  const char* text = PQgetvalue(res_, row, col);
  if (std::strcmp(text, "t") == 0) return true;
  if (std::strcmp(text, "f") == 0) return false;
  throw Error("", "expected a boolean, got \"" + std::string(text) +
                      "\" in column " + PQfname(res_, col));
}

std::int64_t Result::affected() const {
  const char* n = res_ ? PQcmdTuples(res_) : "";
  return (n && *n) ? std::strtoll(n, nullptr, 10) : 0;
}

// ---------------------------------------------------------------- Connection

struct Connection::NoticeLog {
  std::vector<Notice> notices;  // the current statement's
  // The receiver libpq had before: its default one, which hands the text
  // to the notice processor (stderr, or nothing once silenced).
  PQnoticeReceiver next = nullptr;

  static void receive(void* arg, const PGresult* res) noexcept {
    auto* log = static_cast<NoticeLog*>(arg);
    try {
      log->notices.push_back({field_of(res, PG_DIAG_SEVERITY_NONLOCALIZED),
                              field_of(res, PG_DIAG_SQLSTATE),
                              field_of(res, PG_DIAG_MESSAGE_PRIMARY),
                              field_of(res, PG_DIAG_MESSAGE_DETAIL),
                              field_of(res, PG_DIAG_SOURCE_FUNCTION)});
    } catch (...) {
      // Out of memory: the notice is printed, not recorded.
    }
    if (log->next) log->next(nullptr, res);
  }
};

Connection::Connection(const std::string& conninfo)
    : Connection(PQconnectdb(conninfo.c_str())) {
  check_connected();
}

Connection::Connection(const std::string& conninfo,
                       const std::string& fallback_application_name)
    : Connection([&] {
        // dbname is expanded as a conninfo string, as PQconnectdb would.
        const char* keys[] = {"dbname", "fallback_application_name", nullptr};
        const char* values[] = {conninfo.c_str(),
                                fallback_application_name.c_str(), nullptr};
        return PQconnectdbParams(keys, values, 1);
      }()) {
  check_connected();
}

void Connection::check_connected() {
  if (!conn_) throw Error("", "out of memory allocating a connection");
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string message = trimmed(PQerrorMessage(conn_));
    close();
    // 08001: the client could not establish the connection.
    throw Error("08001", "could not connect: " + message);
  }
}

Connection::Connection(PGconn* conn)
    : conn_(conn), log_(std::make_unique<NoticeLog>()) {
  if (conn_) {
    log_->next = PQsetNoticeReceiver(conn_, &NoticeLog::receive, log_.get());
  }
}

Connection::~Connection() { close(); }

Connection::Connection(Connection&& other) noexcept
    : conn_(std::exchange(other.conn_, nullptr)), log_(std::move(other.log_)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    close();
    conn_ = std::exchange(other.conn_, nullptr);
    log_ = std::move(other.log_);
  }
  return *this;
}

void Connection::begin_statement() {
  if (log_) log_->notices.clear();
}

const std::vector<Notice>& Connection::notices() const {
  static const std::vector<Notice> none;
  return log_ ? log_->notices : none;
}

std::optional<Notice> Connection::commit_not_replicated() const {
  for (const Notice& n : notices()) {
    if (n.commit_not_replicated()) return n;
  }
  return std::nullopt;
}

void Connection::close() noexcept {
  if (conn_) PQfinish(conn_);
  conn_ = nullptr;
}

Result Connection::run(const std::string& sql, const std::vector<Param>& params,
                       bool throw_on_error) {
  if (!conn_) throw Error("", "connection is closed (moved from)");
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const Param& p : params) values.push_back(p ? p->c_str() : nullptr);
  begin_statement();
  // Null types, lengths and formats: every parameter is text and the server
  // infers its type from the statement; results come back as text.
  PGresult* res =
      PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                   values.data(), nullptr, nullptr, 0);
  // Read the connection's message only after the call that may set it.
  Result result(res, trimmed(PQerrorMessage(conn_)));
  if (throw_on_error && !result.ok()) result.raise();
  return result;
}

std::optional<Connection> Connection::open_interruptible(
    const std::string& conninfo, const std::string& application_name,
    const KeepWaiting& keep_waiting) {
  // dbname is expanded as a conninfo string, as PQconnectStart would.
  const char* keys[] = {"dbname", "fallback_application_name", nullptr};
  const char* values[] = {conninfo.c_str(), application_name.c_str(), nullptr};
  Connection c(PQconnectStartParams(keys, values, 1));
  if (!c.conn_) throw Error("", "out of memory allocating a connection");
  // libpq's asynchronous connection loop: wait for the socket in the
  // direction PQconnectPoll asks for, then call it again.
  PostgresPollingStatusType step = PGRES_POLLING_WRITING;
  while (PQstatus(c.conn_) != CONNECTION_BAD && step != PGRES_POLLING_OK &&
         step != PGRES_POLLING_FAILED) {
    if (!keep_waiting()) return std::nullopt;
    if (!wait_socket(c.conn_, step == PGRES_POLLING_WRITING, kWaitSliceMs)) {
      break;
    }
    step = PQconnectPoll(c.conn_);
  }
  if (PQstatus(c.conn_) != CONNECTION_OK) {
    throw Error("08001",
                "could not connect: " + trimmed(PQerrorMessage(c.conn_)));
  }
  return c;
}

std::optional<Result> Connection::run_interruptible(
    const std::string& sql, const std::vector<Param>& params,
    const KeepWaiting& keep_waiting) {
  if (!conn_) throw Error("", "connection is closed (moved from)");
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const Param& p : params) values.push_back(p ? p->c_str() : nullptr);
  begin_statement();
  if (!PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(values.size()),
                         nullptr, values.data(), nullptr, nullptr, 0)) {
    return Result(nullptr, trimmed(PQerrorMessage(conn_)));
  }
  while (PQisBusy(conn_)) {
    if (!keep_waiting()) return std::nullopt;
    if (!wait_socket(conn_, false, kWaitSliceMs) || !PQconsumeInput(conn_)) {
      return Result(nullptr, trimmed(PQerrorMessage(conn_)));
    }
  }
  // One statement gives one result; keep the last, drain to the end.
  Result last(nullptr, "no result");
  while (PGresult* r = PQgetResult(conn_)) {
    last = Result(r, trimmed(PQerrorMessage(conn_)));
  }
  return last;
}

std::vector<Notification> Connection::notifications(
    std::chrono::milliseconds wait) {
  if (!conn_) throw Error("", "connection is closed (moved from)");
  if (!wait_socket(conn_, false, static_cast<int>(wait.count())) ||
      !PQconsumeInput(conn_) || PQstatus(conn_) != CONNECTION_OK) {
    throw Error("08006", "connection lost: " + trimmed(PQerrorMessage(conn_)));
  }
  std::vector<Notification> out;
  while (PGnotify* n = PQnotifies(conn_)) {
    out.push_back({n->relname, n->extra});
    PQfreemem(n);
  }
  return out;
}

void Connection::silence_notices() {
  if (conn_)
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
}

int Connection::backend_pid() const { return conn_ ? PQbackendPID(conn_) : 0; }

}  // namespace dlock::pq
