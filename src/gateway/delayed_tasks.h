// Runs tasks at a later time on one thread of its own: how the gateway
// holds a request whose sites are all benched by Retry-After until the
// first bench ends, instead of refusing it at once.
//
// Threads: Post from any thread; tasks run on the owned thread, one at a
// time, in time order, and must be quick. Stop (and the destructor) runs
// every task still pending at once, in time order, so what they hold is
// answered rather than dropped; Post after Stop runs the task at once on
// the caller's thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"

namespace swiftlet::gateway {

class DelayedTasks {
 public:
  DelayedTasks();
  ~DelayedTasks();

  DelayedTasks(const DelayedTasks&) = delete;
  DelayedTasks& operator=(const DelayedTasks&) = delete;

  // Runs `task` at `at_ns` (steady clock, core/clock.h's scale) or soon after.
  void Post(int64_t at_ns, std::function<void()> task);
  // Brings the earliest pending task forward to now (no-op when none): what
  // it waited for happened sooner than its time said.
  void RunEarliestNow();
  void Stop();

  size_t pending() const;

 private:
  void Run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<int64_t, std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace swiftlet::gateway
