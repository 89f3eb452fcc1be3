#include "gateway/delayed_tasks.h"

#include <chrono>
#include <limits>
#include <utility>
#include <vector>

#include "core/clock.h"

namespace swiftlet::gateway {

DelayedTasks::DelayedTasks() : thread_([this] { Run(); }) {}

DelayedTasks::~DelayedTasks() { Stop(); }

void DelayedTasks::Post(int64_t at_ns, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_) {
      const bool first = tasks_.empty() || at_ns < tasks_.begin()->first;
      tasks_.emplace(at_ns, std::move(task));
      if (first) cv_.notify_all();
      return;
    }
  }
  task();
}

void DelayedTasks::RunEarliestNow() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || tasks_.empty()) return;
  auto first = tasks_.begin();
  std::function<void()> task = std::move(first->second);
  tasks_.erase(first);
  tasks_.emplace(std::numeric_limits<int64_t>::min(), std::move(task));
  cv_.notify_all();
}

void DelayedTasks::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

size_t DelayedTasks::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_.size();
}

void DelayedTasks::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (stop_) break;
    if (tasks_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const int64_t now = SystemClock().NowNs();
    auto first = tasks_.begin();
    if (first->first > now) {
      cv_.wait_for(lock, std::chrono::nanoseconds(first->first - now));
      continue;
    }
    std::function<void()> task = std::move(first->second);
    tasks_.erase(first);
    lock.unlock();
    task();
    lock.lock();
  }
  // Stopping: what is left runs now, so held requests get their answer.
  std::multimap<int64_t, std::function<void()>> left;
  left.swap(tasks_);
  lock.unlock();
  for (auto& [at, task] : left) task();
}

}  // namespace swiftlet::gateway
