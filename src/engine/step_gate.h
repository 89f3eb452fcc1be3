// Engines of several models share one compute pool (sized to the cores, so
// the models never oversubscribe them), and a forward pass uses the whole
// pool. StepGate decides whose forward runs next: earliest deadline first
// (the latest time the step can start and still meet its most urgent
// target: a decode's next token, a prefill's first), then class rank
// (interactive < embedding < batch), then first come. Deadlines, not
// classes, come first so that nothing starves: a batch step waits while
// interactive ones are due sooner, and runs once its own time comes; a
// prefill due in 400 ms is not held back by another model's decodes due
// every 100 ms beyond its deadline.
//
// Thread-safe. A Turn is held for one step's forward pass and the draws
// of its sampled rows (which run on the same pool), and released by its
// destructor.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <tuple>

#include "core/thread_pool.h"

namespace swiftlet {

class StepGate {
 public:
  // `threads` is the shared pool's size, the caller included.
  explicit StepGate(int threads) : pool_(threads) {}
  StepGate(const StepGate&) = delete;
  StepGate& operator=(const StepGate&) = delete;

  // A turn held (or none, default-constructed); moving hands it over,
  // assigning or destroying gives it back.
  class Turn {
   public:
    Turn() = default;
    Turn(Turn&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Turn& operator=(Turn&& other) noexcept {
      if (this != &other) {
        if (gate_ != nullptr) gate_->Release();
        gate_ = other.gate_;
        other.gate_ = nullptr;
      }
      return *this;
    }
    ~Turn() {
      if (gate_ != nullptr) gate_->Release();
    }

   private:
    friend class StepGate;
    explicit Turn(StepGate* gate) : gate_(gate) {}
    StepGate* gate_ = nullptr;
  };

  // Blocks until no forward pass holds the pool and no more urgent waiter
  // is queued. `deadline_ns` and `rank` describe the most urgent work in
  // the caller's step.
  Turn Acquire(int rank, int64_t deadline_ns);

  ComputePool& pool() { return pool_; }
  // Turns granted so far, and callers waiting for one now (tests).
  int64_t turns() const;
  int64_t waiting() const;

 private:
  void Release();

  using Waiter = std::tuple<int64_t, int, uint64_t>;  // deadline, rank, arrival
  ComputePool pool_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<Waiter> waiting_;
  uint64_t next_arrival_ = 0;
  int64_t turns_ = 0;
  bool busy_ = false;
};

}  // namespace swiftlet
