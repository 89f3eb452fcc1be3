// ComputePool: a persistent pool of worker threads for the per-token path.
//
// Run(n, fn) calls fn(i) for every i in [0, n) across the pool and the
// calling thread, and returns when all calls are done. Workers spin briefly
// after a job (the next matmul of a forward pass follows within
// microseconds), then sleep on a condition variable, so an idle server costs
// no CPU. No allocation per Run: fn is borrowed (absl::FunctionRef), never
// copied into a std::function. One caller at a time: the engine thread.
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
  void Drain();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> next_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<int> active_{0};  // Workers inside Drain() for the current job.
  int64_t n_ = 0;
  // The current job; null between jobs, so a worker that wakes late never
  // touches a finished job. Set and cleared under mu_.
  const absl::FunctionRef<void(int64_t)>* fn_ = nullptr;
  bool stop_ = false;
};

// Physical cores when the OS reports them (hyperthread siblings counted
// once), else the logical count; at least 1.
int PhysicalCores();

}  // namespace swiftlet
