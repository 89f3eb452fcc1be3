// Engines of several models share one compute pool (sized to the cores, so
// the models never oversubscribe them), and a forward pass uses the whole
// pool. StepGate decides whose forward runs next: the waiter with the most
// urgent work — lowest class rank (interactive < embedding < batch), then
// earliest deadline, then first come — so one model's batch prefill never
// holds back another model's interactive decode, and equals alternate.
//
// Thread-safe. A Turn is held for one forward pass and released by its
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

  class Turn {
   public:
    Turn(Turn&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Turn& operator=(Turn&&) = delete;
    ~Turn() {
      if (gate_ != nullptr) gate_->Release();
    }

   private:
    friend class StepGate;
    explicit Turn(StepGate* gate) : gate_(gate) {}
    StepGate* gate_;
  };

  // Blocks until no forward pass holds the pool and no more urgent waiter
  // is queued. `rank` and `deadline_ns` describe the most urgent work in
  // the caller's step.
  Turn Acquire(int rank, int64_t deadline_ns);

  ComputePool& pool() { return pool_; }
  // Turns granted so far (tests).
  int64_t turns() const;

 private:
  void Release();

  using Waiter = std::tuple<int, int64_t, uint64_t>;  // rank, deadline, arrival
  ComputePool pool_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<Waiter> waiting_;
  uint64_t next_arrival_ = 0;
  int64_t turns_ = 0;
  bool busy_ = false;
};

}  // namespace swiftlet
