// ComputePool: a persistent pool of worker threads for the per-token path.
//
// Run(n, fn) calls fn(i) for every i in [0, n) across the pool and the
// calling thread, and returns when all calls are done. A decode step makes
// about a hundred Runs a few microseconds apart, so publishing a job takes
// no lock and no system call while the workers are awake: they poll for the
// next job for a while after each one (kSpin in thread_pool.cc), and only
// then sleep on a condition variable, so an idle server costs no CPU. No
// allocation per Run: fn is borrowed (absl::FunctionRef), never copied into
// a std::function. One caller at a time: the engine thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace swiftlet {

class ComputePool {
 public:
  // `threads` includes the caller: threads - 1 workers are started.
  explicit ComputePool(int threads);
  ~ComputePool();
  ComputePool(const ComputePool&) = delete;
  ComputePool& operator=(const ComputePool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(i) for i in [0, n); tasks are claimed one by one, so which
  // thread runs which task varies, and results must not depend on it.
  void Run(int64_t n, absl::FunctionRef<void(int64_t)> fn);

 private:
  void WorkerLoop();
  // Waits until the generation differs from `seen`; false when stopping.
  bool WaitForJob(uint64_t seen);
  void Drain();

  std::vector<std::thread> workers_;
  // Odd while a job is open to workers, even between jobs. A worker joins a
  // job only by raising active_ and then finding the generation unchanged;
  // Run closes the job (generation + 1) before it waits for active_ to fall
  // to 0, so no worker is inside a job once Run returns.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> active_{0};
  std::atomic<int> sleepers_{0};  // Workers waiting on wake_.
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable wake_;
  // The open job: written by Run only while no worker can be inside one.
  alignas(64) std::atomic<int64_t> next_{0};
  alignas(64) std::atomic<int64_t> done_{0};
  int64_t n_ = 0;
  const absl::FunctionRef<void(int64_t)>* fn_ = nullptr;
};

// Physical cores when the OS reports them (hyperthread siblings counted
// once), else the logical count; at least 1.
int PhysicalCores();

}  // namespace swiftlet
