#include "engine/step_gate.h"

namespace swiftlet {

StepGate::Turn StepGate::Acquire(int rank, int64_t deadline_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  const Waiter me{deadline_ns, rank, next_arrival_++};
  waiting_.insert(me);
  cv_.wait(lock, [&] { return !busy_ && *waiting_.begin() == me; });
  waiting_.erase(waiting_.begin());
  busy_ = true;
  ++turns_;
  return Turn(this);
}

void StepGate::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_ = false;
  }
  // Every waiter checks whether it is now first.
  cv_.notify_all();
}

int64_t StepGate::turns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return turns_;
}

int64_t StepGate::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(waiting_.size());
}

}  // namespace swiftlet
