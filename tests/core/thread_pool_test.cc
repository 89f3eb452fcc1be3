#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace swiftlet {
namespace {

TEST(ComputePoolTest, RunsEveryTaskExactlyOnceAcrossManyJobs) {
  for (int threads : {1, 2, 3, 5}) {
    ComputePool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int64_t n : {0, 1, 2, 7, 64, 1000}) {
      for (int job = 0; job < 50; ++job) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.Run(n, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
        // Run returns only after every task finished: no task may still be
        // running (or start) after this point.
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "task " << i << " of " << n;
      }
    }
  }
}

TEST(ComputePoolTest, WakesAfterSleeping) {
  ComputePool pool(2);
  std::atomic<int64_t> sum{0};
  pool.Run(10, [&](int64_t i) { sum += i; });
  // Long enough for the worker to stop spinning and wait on the condition.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  pool.Run(10, [&](int64_t i) { sum += i; });
  EXPECT_EQ(sum.load(), 90);
}

// Jobs back to back, as a forward pass runs them, each with its own stack
// state: a worker that came late to one job and still ran a task of it (or
// read its task count) after Run returned would write into the next job's
// counters and fail the check (and ASan would see the dead frame). Pauses
// between some jobs let workers fall asleep, so the wake path races too.
TEST(ComputePoolTest, NoTaskEscapesItsJobAcrossRapidAndSleepyJobs) {
  ComputePool pool(3);
  for (int job = 0; job < 20000; ++job) {
    const int64_t n = 2 + job % 5;
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.Run(n, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed); });
    int total = 0;
    for (const auto& h : hits) total += h.load();
    ASSERT_EQ(total, n) << "job " << job;
    if (job % 2000 == 1999) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

TEST(PhysicalCoresTest, AtLeastOneAndAtMostTheLogicalCount) {
  EXPECT_GE(PhysicalCores(), 1);
  EXPECT_LE(PhysicalCores(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace
}  // namespace swiftlet
