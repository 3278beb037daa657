// What every part of the demo shares: the lease the workers race for, the
// workers' names and the memory in which each worker tells the director
// what it is doing. main.cpp describes the whole demo.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace demo {

constexpr char kLease[] = "nightly-report";
constexpr char kTtl[] = "2 s";  // lease time-to-live
constexpr auto kTtlDuration = std::chrono::milliseconds(2'000);  // the same
constexpr int kWorkers = 6;  // worker-1 .. worker-6
// How long a holder prepares the report before its fenced write.
constexpr int kWorkMinMs = 100;
constexpr int kWorkMaxMs = 400;

// "worker-N": the owner worker N takes the lease as.
std::string worker_name(int id);
// Worker N's application_name, as pg_stat_activity shows it.
std::string app_name(int id);

// What one worker is doing, in memory shared by all processes (lock-free
// atomics work across processes).
struct Slot {
  std::atomic<std::int64_t> token{0};          // held while preparing, else 0
  std::atomic<std::int64_t> work_began_ns{0};  // forked::now_ns()
};

struct Shared {
  Slot slots[kWorkers];
  Slot& of(int id) { return slots[id - 1]; }
};

// worker.cpp: worker N's loop, in its own process, until asked to stop.
void run_worker(int id, Slot& slot);

}  // namespace demo
