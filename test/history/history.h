// A history of what clients asked of dlock and what they were told: the
// record that the pooler, failover and soak runs write and that the
// checker (checker.h) judges. Plain C++ without a server, so that tests
// can feed the checker made-up histories.
//
// Each client (a process or a thread) appends to a file of its own, one
// JSON object per line: an "invoke" line before it sends a call, and a
// "complete" line when the answer arrives. A call whose complete line never
// comes (the client was killed, or its connection died before the answer) has
// an unknown outcome: it may or may not have taken effect, and the checker
// weighs both.
//
// Instants: invoked_us and completed_us are the client's clock, the rest
// the server's (clock_timestamp()), all in microseconds since the Unix
// epoch. The checker orders calls in real time by the client's clock, and
// judges holds by the server's; clients and servers run on one machine.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace dlock::history {

enum class Call {
  grant,          // try_acquire or acquire of an exclusive lease
  renew,          // renew(name, token)
  release,        // release(name, token)
  write,          // a fenced write of the name's row with the token
  force_release,  // force_release(name): ends whoever holds it
  initial_row,    // the name's row as read before the run
  final_row,      // the name's row as read after the run
};

enum class Outcome {
  ok,       // did what was asked: granted, renewed, released (true),
            // written (the row updated), force-released, row read
  busy,     // grant: the lease was busy (NULL)
  refused,  // it answered that the token does not hold: release false,
            // renew's error, a fenced write rejected (stale token)
  failed,   // an error (sqlstate): its transaction rolled back
  unknown,  // no answer: it may or may not have taken effect
};

struct Op {
  std::int64_t id = 0;  // unique within its client's file
  std::string client;   // the logging client
  Call call = Call::grant;
  Outcome outcome = Outcome::unknown;
  std::string name;
  std::string owner;
  // grant: the granted token (0 if none); renew, release, write: the
  // token sent; initial_row, final_row: the row's fence token.
  std::int64_t token = 0;
  std::int64_t ttl_ms = 0;  // grant, renew
  // grant: a shared (reader's) grant, or one of a semaphore of `permits`
  // holders; neither: an exclusive grant.
  bool shared = false;
  std::int64_t permits = 0;
  std::int64_t invoked_us = 0;    // client's clock, before sending
  std::int64_t completed_us = 0;  // client's clock, on the answer (0: none)
  // grant, renew (ok): acquired_at and expires_at as the server returned.
  std::int64_t acquired_us = 0;
  std::int64_t expires_us = 0;
  // release, write, force_release (ok): clock_timestamp() read by the
  // server in the call's statement, after the call.
  std::int64_t server_us = 0;
  std::string value;     // write: the value written (unique per write);
                         // initial_row, final_row: the value read
  std::string sqlstate;  // failed, refused: the error's SQLSTATE
  std::string note;      // free text for reports (an error message)
};

const char* to_string(Call c);
const char* to_string(Outcome o);

// Appends a client's operations to its file, one line per write(2), so a
// SIGKILL loses at most the line being written.
class Log {
 public:
  Log(const std::string& path, std::string client);
  ~Log();
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // Records the invocation (call, name, owner, token, ttl_ms, value) and
  // returns the op with its id and invoked_us filled in.
  Op invoke(Op op);
  // Records the completion of an invoked op (outcome and answers);
  // completed_us is set here.
  void complete(Op& op);
  // Both at once, for reads that cannot fail in an unknown way.
  void record(Op op);

 private:
  int fd_ = -1;
  std::string client_;
  std::int64_t next_id_ = 1;
};

// The client's clock, microseconds since the Unix epoch.
std::int64_t now_us();

// Reads every file's lines and merges each invoke with its complete line;
// an invoke with none gets Outcome::unknown. Throws std::runtime_error on a
// malformed line (its file and line number).
std::vector<Op> read_files(const std::vector<std::string>& paths);

// The lines of one op, as Log writes them; for tests that build files.
std::string invoke_line(const Op& op);
std::string complete_line(const Op& op);

// One line describing an op, for reports.
std::string describe(const Op& op);

}  // namespace dlock::history
