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

TEST(PhysicalCoresTest, AtLeastOneAndAtMostTheLogicalCount) {
  EXPECT_GE(PhysicalCores(), 1);
  EXPECT_LE(PhysicalCores(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace
}  // namespace swiftlet
