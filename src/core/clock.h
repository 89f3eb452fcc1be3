// Time for latency accounting, injectable so tests script it instead of
// sleeping. Nanoseconds on a monotonic scale with an arbitrary origin.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

namespace swiftlet {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowNs() const = 0;
};

// std::chrono::steady_clock. Thread-safe; lives for the whole program.
inline const Clock& SystemClock() {
  struct Steady final : Clock {
    int64_t NowNs() const override {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::steady_clock::now().time_since_epoch())
          .count();
    }
  };
  static const Steady clock;
  return clock;
}

// A clock that moves only when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_ns = 0) : now_(start_ns) {}
  int64_t NowNs() const override { return now_.load(std::memory_order_acquire); }
  void Set(int64_t ns) { now_.store(ns, std::memory_order_release); }
  void Advance(int64_t ns) { now_.fetch_add(ns, std::memory_order_acq_rel); }

 private:
  std::atomic<int64_t> now_;
};

// Blocks until a clock reads at least until_ns (returns at once when past):
// how a load driver waits for its next arrival. A real one sleeps; a test's
// advances its FakeClock.
using SleepFn = std::function<void(int64_t until_ns)>;

// Sleeps on std::chrono::steady_clock, the scale of SystemClock().
inline SleepFn SystemSleep() {
  return [](int64_t until_ns) {
    std::this_thread::sleep_until(
        std::chrono::steady_clock::time_point(std::chrono::nanoseconds(until_ns)));
  };
}

inline constexpr int64_t kNsPerMs = 1'000'000;
inline constexpr int64_t kNsPerSecond = 1'000'000'000;

// Nanoseconds as fractional milliseconds, the unit reports and logs print.
inline constexpr double Ms(double ns) { return ns / static_cast<double>(kNsPerMs); }

}  // namespace swiftlet
