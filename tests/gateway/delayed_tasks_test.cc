#include "gateway/delayed_tasks.h"

#include <future>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "core/clock.h"

namespace swiftlet::gateway {
namespace {

TEST(DelayedTasks, RunsInTimeOrder) {
  DelayedTasks tasks;
  std::mutex mu;
  std::vector<int> order;
  std::promise<void> last;
  const int64_t now = SystemClock().NowNs();
  tasks.Post(now + 30'000'000, [&] {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(3);
    last.set_value();
  });
  tasks.Post(now + 10'000'000, [&] {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(2);
  });
  tasks.Post(now - 1, [&] {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(1);
  });
  ASSERT_EQ(last.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(DelayedTasks, TheEarliestCanBeBroughtForward) {
  DelayedTasks tasks;
  std::promise<int> ran;
  const int64_t hour = 3'600'000'000'000;
  tasks.Post(SystemClock().NowNs() + hour, [&] { ran.set_value(1); });
  tasks.Post(SystemClock().NowNs() + 2 * hour, [] {});
  tasks.RunEarliestNow();
  auto f = ran.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(f.get(), 1);
  EXPECT_EQ(tasks.pending(), 1u);
}

TEST(DelayedTasks, StopRunsWhatIsPendingAndLaterPostsRunAtOnce) {
  DelayedTasks tasks;
  int ran = 0;
  tasks.Post(SystemClock().NowNs() + 3'600'000'000'000, [&] { ++ran; });
  EXPECT_EQ(tasks.pending(), 1u);
  tasks.Stop();
  EXPECT_EQ(ran, 1);
  tasks.Post(SystemClock().NowNs() + 3'600'000'000'000, [&] { ++ran; });
  EXPECT_EQ(ran, 2);
}

}  // namespace
}  // namespace swiftlet::gateway
