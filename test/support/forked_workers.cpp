#include "forked_workers.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace forked {

namespace {

// Set by SIGTERM in a worker; read by stop_requested().
volatile sig_atomic_t g_stop = 0;

void on_sigterm(int) { g_stop = 1; }

}  // namespace

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void* map_shared(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw std::system_error(errno, std::generic_category(), "mmap");
  }
  return p;
}

void unmap_shared(void* p, std::size_t bytes) noexcept { munmap(p, bytes); }

bool stop_requested() { return g_stop != 0; }

bool Worker::exited_cleanly() const {
  return !running && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

Workers::Workers(std::function<std::string(int)> name)
    : name_(std::move(name)) {}

Workers::~Workers() {
  for (Worker& w : workers_) {
    if (w.running) end(w);
  }
  if (errors_) unmap_shared(errors_, sizeof(ErrorText) * started_);
}

void Workers::start(int count, const std::function<void(int)>& body,
                    int parent_death) {
  if (errors_) throw std::logic_error("forked::Workers started twice");
  errors_ = static_cast<ErrorText*>(map_shared(sizeof(ErrorText) * count));
  for (int i = 0; i < count; ++i) new (&errors_[i]) ErrorText();
  started_ = count;
  // A child inherits unflushed stdio buffers and would print them again.
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = getpid();
  for (int index = 0; index < count; ++index) {
    const pid_t pid = fork();
    if (pid < 0) {
      throw std::system_error(errno, std::generic_category(), "fork");
    }
    if (pid == 0) run_child(index, body, parent_death, parent);
    Worker w;
    w.pid = pid;
    w.running = true;
    workers_.push_back(w);
  }
}

// Never returns: _exit() skips the parent's atexit handlers, stdio buffers
// and destructors, which belong to the parent.
void Workers::run_child(int index, const std::function<void(int)>& body,
                        int parent_death, pid_t parent) {
  struct sigaction sa = {};
  sa.sa_handler = on_sigterm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  prctl(PR_SET_PDEATHSIG, parent_death);
  // The parent may have died before prctl() took effect.
  if (getppid() != parent) raise(parent_death);
  int code = 0;
  try {
    body(index);
  } catch (const std::exception& e) {
    ErrorText& out = errors_[index];
    std::snprintf(out.text, sizeof out.text, "%s: %s", name_(index).c_str(),
                  e.what());
    std::fprintf(stderr, "%s\n", out.text);
    code = 1;
  }
  _exit(code);
}

bool Workers::pause(int index) {
  Worker& w = workers_[index];
  if (!w.running) return false;
  ::kill(w.pid, SIGSTOP);
  int status = 0;
  if (waitpid(w.pid, &status, WUNTRACED) != w.pid || !WIFSTOPPED(status)) {
    w.status = status;
    w.running = false;
    return false;
  }
  w.paused = true;
  return true;
}

void Workers::resume(int index) {
  Worker& w = workers_[index];
  if (!w.running || !w.paused) return;
  ::kill(w.pid, SIGCONT);
  w.paused = false;
}

void Workers::kill(int index) {
  Worker& w = workers_[index];
  if (!w.running) return;
  end(w);
  w.killed = true;
}

void Workers::end(Worker& w) {
  ::kill(w.pid, SIGKILL);
  waitpid(w.pid, &w.status, 0);
  w.running = false;
  w.paused = false;
}

bool Workers::stop_all(std::chrono::milliseconds allowed) {
  for (int i = 0; i < size(); ++i) {
    if (!workers_[i].running) continue;
    resume(i);
    ::kill(workers_[i].pid, SIGTERM);
  }
  poll_until(allowed, std::chrono::milliseconds(10), [&] {
    bool any_running = false;
    for (Worker& w : workers_) {
      if (w.running && waitpid(w.pid, &w.status, WNOHANG) == w.pid) {
        w.running = false;
      }
      any_running = any_running || w.running;
    }
    return !any_running;
  });
  bool all_stopped = true;
  for (Worker& w : workers_) {
    if (!w.running) continue;
    end(w);
    w.forced = true;
    all_stopped = false;
  }
  return all_stopped;
}

const char* Workers::error(int index) const {
  return errors_ ? errors_[index].text : "";
}

}  // namespace forked
