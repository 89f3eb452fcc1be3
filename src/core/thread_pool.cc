#include "core/thread_pool.h"

#include <immintrin.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace swiftlet {
namespace {

// How long a worker polls for the next job before it sleeps: longer than
// the serial work between two matmuls of a forward pass and than most of
// the engine's work between two steps, short enough that an idle server
// stops burning a core within a blink.
constexpr auto kSpin = std::chrono::microseconds(200);

// Tells the core this is a spin loop (frees the pipeline for a sibling
// thread, saves power); PAUSE is in every x86-64.
inline void CpuRelax() { _mm_pause(); }

}  // namespace

ComputePool::ComputePool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ComputePool::~ComputePool() {
  stop_.store(true);
  { std::lock_guard<std::mutex> lock(mu_); }  // A worker about to wait sees stop_ or the notify.
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ComputePool::Drain() {
  const int64_t n = n_;
  const auto& fn = *fn_;
  for (int64_t i = next_.fetch_add(1, std::memory_order_relaxed); i < n;
       i = next_.fetch_add(1, std::memory_order_relaxed)) {
    fn(i);
    done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ComputePool::Run(int64_t n, absl::FunctionRef<void(int64_t)> fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  // No worker is inside a job here (the last Run waited for active_ == 0),
  // and none can join one until the generation turns odd.
  const uint64_t closed = generation_.load(std::memory_order_relaxed);
  n_ = n;
  fn_ = &fn;
  next_.store(0, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  generation_.store(closed + 1);  // Open. seq_cst: paired with sleepers_ below.
  if (sleepers_.load() > 0) {
    // A sleeper holds mu_ from counting itself until it waits, so taking
    // the lock here means it is waiting (and gets the notify) or has not
    // yet looked at the generation (and sees the new one).
    { std::lock_guard<std::mutex> lock(mu_); }
    wake_.notify_all();
  }
  Drain();
  for (int spins = 0; done_.load(std::memory_order_acquire) < n; ++spins) {
    // A worker descheduled mid-task can take a while: stop hogging the core.
    if (spins >= 1 << 16) std::this_thread::yield(); else CpuRelax();
  }
  // Close, then wait out workers that joined: one that raises active_ after
  // this store finds the generation changed and leaves without touching the
  // job (both seq_cst, so one of the two always sees the other).
  generation_.store(closed + 2);
  while (active_.load() != 0) CpuRelax();
  fn_ = nullptr;
}

bool ComputePool::WaitForJob(uint64_t seen) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1;; ++i) {
    if (stop_.load(std::memory_order_relaxed)) return false;
    if (generation_.load(std::memory_order_acquire) != seen) return true;
    CpuRelax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) break;
  }
  std::unique_lock<std::mutex> lock(mu_);
  sleepers_.fetch_add(1);
  wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
  sleepers_.fetch_sub(1);
  return !stop_.load();
}

void ComputePool::WorkerLoop() {
  uint64_t seen = 0;
  while (WaitForJob(seen)) {
    const uint64_t g = generation_.load(std::memory_order_acquire);
    seen = g;
    if (g % 2 == 0) continue;  // Closed before this worker got to it.
    active_.fetch_add(1);
    if (generation_.load() == g) Drain();
    active_.fetch_sub(1);
  }
}

int PhysicalCores() {
  // Count distinct (physical id, core id) pairs in /proc/cpuinfo.
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, physical = "0";
  while (std::getline(in, line)) {
    auto value = [&] { return line.substr(line.find(':') + 1); };
    if (line.rfind("physical id", 0) == 0) physical = value();
    if (line.rfind("core id", 0) == 0) cores.emplace(physical, value());
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace swiftlet
