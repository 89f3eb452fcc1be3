#include "core/thread_pool.h"

#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace swiftlet {
namespace {

// How long a worker polls for the next job before sleeping.
constexpr int kSpinIterations = 20000;

}  // namespace

ComputePool::ComputePool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ComputePool::~ComputePool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    n_ = n;
    fn_ = &fn;
    next_.store(0, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  Drain();
  // Return only when every task is done and no worker is still inside the
  // job; clearing fn_ under the lock shuts out workers that wake late.
  while (true) {
    if (done_.load(std::memory_order_acquire) >= n) {
      std::lock_guard<std::mutex> lock(mu_);
      if (active_.load(std::memory_order_acquire) == 0) {
        fn_ = nullptr;
        return;
      }
    }
    std::this_thread::yield();
  }
}

void ComputePool::WorkerLoop() {
  uint64_t seen = 0;
  while (true) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinIterations) ++spins;
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    }
    std::unique_lock<std::mutex> lock(mu_);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_) return;
    if (fn_ == nullptr) continue;  // Woke after the job finished.
    active_.fetch_add(1, std::memory_order_acq_rel);
    lock.unlock();
    Drain();
    active_.fetch_sub(1, std::memory_order_acq_rel);
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
