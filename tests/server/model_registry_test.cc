// The registry's policy (budget, LRU eviction, leases, waits, keep-alive,
// admin unload) with a loader that makes models of a given size without
// weights: what a load costs is the real loader's business (e2e_multi_model
// runs the real one).
#include "server/model_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "core/clock.h"

namespace swiftlet::server {
namespace {

using Answer = ModelRegistry::Answer;

// A file of `bytes` bytes: its size is the registry's load estimate.
std::string FileOf(const std::string& name, size_t bytes) {
  const std::string path = testing::TempDir() + "/registry-" + name + ".gguf";
  std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
  return path;
}

struct Fixture {
  std::map<std::string, uint64_t> bytes;  // What each model holds once hot.
  std::atomic<int> loads{0};
  std::mutex mu;
  std::condition_variable cv;
  bool gate_open = true;  // Closed: loads wait (a model stays "loading").
  std::string fail;       // A model whose load fails.

  ModelRegistry::Loader Loader() {
    return [this](const ModelSpec& spec) -> absl::StatusOr<std::unique_ptr<HostedModel>> {
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return gate_open; });
      }
      ++loads;
      if (spec.name == fail) return absl::DataLossError("bad file");
      auto h = std::make_unique<HostedModel>();
      h->memory_bytes = bytes.at(spec.name);
      return h;
    };
  }
  void Gate(bool open) {
    {
      std::lock_guard<std::mutex> lock(mu);
      gate_open = open;
    }
    cv.notify_all();
  }
};

// Acquire, waiting for the answer.
Answer AcquireNow(ModelRegistry& r, const std::string& name, int64_t max_wait_ns = INT64_MAX) {
  std::promise<Answer> p;
  auto f = p.get_future();
  r.Acquire(name, max_wait_ns, [&p](Answer a) { p.set_value(std::move(a)); });
  EXPECT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  return f.get();
}

ModelState StateOf(const ModelRegistry& r, const std::string& name) {
  for (const ModelStatus& m : r.List()) {
    if (m.name == name) return m.state;
  }
  ADD_FAILURE() << "no model " << name;
  return ModelState::kCold;
}

bool WaitForState(const ModelRegistry& r, const std::string& name, ModelState want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (StateOf(r, name) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// Files of 50 bytes: a model never loaded is estimated at twice its file
// (a repacked copy) plus KV (none here), the 100 bytes the loader gives.
std::vector<ModelSpec> ThreeModels() {
  return {{"a", FileOf("a", 50)}, {"b", FileOf("b", 50)}, {"c", FileOf("c", 50)}};
}

TEST(ModelRegistryTest, BudgetOfTwoEvictsTheLeastRecentlyUsedIdleModel) {
  Fixture fx;
  fx.bytes = {{"a", 100}, {"b", 100}, {"c", 100}};
  ModelRegistryOptions o;
  o.memory_budget_bytes = 250;  // The default model and one more.
  auto r = ModelRegistry::Create(ThreeModels(), fx.Loader(), o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE((*r)->Start().ok());
  EXPECT_EQ(StateOf(**r, "a"), ModelState::kHot);  // The default: loaded at start.
  EXPECT_EQ(StateOf(**r, "b"), ModelState::kCold);

  Answer b = AcquireNow(**r, "b");
  ASSERT_NE(b.lease, nullptr) << b.status;
  EXPECT_EQ(b.lease->name(), "b");
  b.lease.reset();
  Answer c = AcquireNow(**r, "c");
  ASSERT_NE(c.lease, nullptr) << c.status;
  EXPECT_EQ(StateOf(**r, "b"), ModelState::kCold);  // Evicted for c.
  EXPECT_EQ(StateOf(**r, "a"), ModelState::kHot);   // The default stays.
  EXPECT_LE((*r)->memory_in_use_bytes(), 250u);
  EXPECT_EQ(fx.loads.load(), 3);
  const std::string metrics = (*r)->FormatMetrics();
  EXPECT_NE(metrics.find("swiftlet_model_unloads_total{model=\"b\",reason=\"evicted\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("swiftlet_model_loads_total{model=\"c\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("swiftlet_model_state{model=\"c\",state=\"hot\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("swiftlet_model_load_seconds_count{model=\"c\"} 1"), std::string::npos);
}

TEST(ModelRegistryTest, AModelWithARequestInFlightIsNeverEvicted) {
  Fixture fx;
  fx.bytes = {{"a", 100}, {"b", 100}, {"c", 100}};
  ModelRegistryOptions o;
  o.memory_budget_bytes = 250;
  auto r = ModelRegistry::Create(ThreeModels(), fx.Loader(), o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Start().ok());
  Answer b = AcquireNow(**r, "b");
  ASSERT_NE(b.lease, nullptr);
  // b is in use: no room for c. A request that may wait 50 ms waits that
  // long for room, then is refused; b stays.
  const auto t0 = std::chrono::steady_clock::now();
  Answer c = AcquireNow(**r, "c", /*max_wait_ns=*/50'000'000);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(40));
  EXPECT_EQ(c.lease, nullptr);
  EXPECT_TRUE(absl::IsUnavailable(c.status)) << c.status;
  EXPECT_NE(std::string(c.status.message()).find("in flight"), std::string::npos) << c.status;
  EXPECT_GT(c.retry_after_ms, 0);
  EXPECT_EQ(StateOf(**r, "b"), ModelState::kHot);
  EXPECT_EQ(StateOf(**r, "c"), ModelState::kCold);
  // One that may wait longer gets c as soon as b's request ends.
  std::promise<Answer> p;
  (*r)->Acquire("c", INT64_MAX, [&p](Answer a) { p.set_value(std::move(a)); });
  auto f = p.get_future();
  EXPECT_EQ(f.wait_for(std::chrono::milliseconds(30)), std::future_status::timeout);
  EXPECT_EQ(StateOf(**r, "b"), ModelState::kHot);
  b.lease.reset();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  c = f.get();
  ASSERT_NE(c.lease, nullptr) << c.status;
  EXPECT_EQ(StateOf(**r, "b"), ModelState::kCold);
}

TEST(ModelRegistryTest, ALoadLongerThanTheRequestMayWaitIsRefusedButGoesOn) {
  Fixture fx;
  fx.bytes = {{"a", 100}, {"b", 100}, {"c", 100}};
  ModelRegistryOptions o;
  auto r2 = ModelRegistry::Create(ThreeModels(), fx.Loader(), o);
  ASSERT_TRUE(r2.ok());
  ASSERT_TRUE((*r2)->Start().ok());  // Loads a: the load rate is measured from it.
  fx.Gate(false);  // b will stay "loading" until the gate opens.
  // The load of b is expected to take b's bytes at a's measured rate,
  // which is positive: a 0 ns wait is too short.
  Answer refused = AcquireNow(**r2, "b", /*max_wait_ns=*/0);
  EXPECT_EQ(refused.lease, nullptr);
  EXPECT_TRUE(absl::IsUnavailable(refused.status)) << refused.status;
  EXPECT_NE(std::string(refused.status.message()).find("loading"), std::string::npos) << refused.status;
  EXPECT_GE(refused.retry_after_ms, 1);
  EXPECT_EQ(StateOf(**r2, "b"), ModelState::kLoading);  // The load goes on.
  // A request that may wait gets it once loaded.
  std::promise<Answer> p;
  (*r2)->Acquire("b", INT64_MAX, [&p](Answer a) { p.set_value(std::move(a)); });
  auto f = p.get_future();
  EXPECT_EQ(f.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);  // Still loading.
  fx.Gate(true);
  ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  Answer got = f.get();
  ASSERT_NE(got.lease, nullptr) << got.status;
  EXPECT_EQ(StateOf(**r2, "b"), ModelState::kHot);
}

TEST(ModelRegistryTest, IdleModelsAreUnloadedAfterTheirKeepAliveUnlessPinned) {
  Fixture fx;
  fx.bytes = {{"a", 100}, {"b", 100}, {"c", 100}};
  FakeClock clock(1'000'000'000);
  auto specs = ThreeModels();
  specs[1].keep_alive_ns = 10 * kNsPerSecond;
  specs[2].keep_alive_ns = 10 * kNsPerSecond;
  specs[2].pinned = true;
  ModelRegistryOptions o;
  o.clock = &clock;
  o.idle_check_ns = 1'000'000;  // Real time between checks: 1 ms.
  auto r = ModelRegistry::Create(specs, fx.Loader(), o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Start().ok());
  EXPECT_EQ(StateOf(**r, "c"), ModelState::kHot);  // Pinned: loaded at start.
  Answer b = AcquireNow(**r, "b");
  ASSERT_NE(b.lease, nullptr);
  clock.Advance(11 * kNsPerSecond);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(StateOf(**r, "b"), ModelState::kHot);  // In use: kept.
  b.lease.reset();  // Last use: now.
  clock.Advance(9 * kNsPerSecond);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(StateOf(**r, "b"), ModelState::kHot);  // 9 s idle of 10.
  clock.Advance(2 * kNsPerSecond);
  EXPECT_TRUE(WaitForState(**r, "b", ModelState::kCold));
  EXPECT_EQ(StateOf(**r, "c"), ModelState::kHot);  // Pinned.
  EXPECT_EQ(StateOf(**r, "a"), ModelState::kHot);  // The default.
  EXPECT_NE((*r)->FormatMetrics().find("swiftlet_model_unloads_total{model=\"b\",reason=\"idle\"} 1"), std::string::npos);
}

TEST(ModelRegistryTest, AdminUnloadRefusesPinnedAndBusyModels) {
  Fixture fx;
  fx.bytes = {{"a", 100}, {"b", 100}, {"c", 100}};
  auto specs = ThreeModels();
  specs[2].pinned = true;
  auto r = ModelRegistry::Create(specs, fx.Loader(), {});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Start().ok());
  auto unload = [&](const std::string& name) {
    std::promise<absl::Status> p;
    (*r)->Unload(name, [&p](absl::Status s) { p.set_value(s); });
    return p.get_future().get();
  };
  EXPECT_TRUE(absl::IsFailedPrecondition(unload("a")));  // The default.
  EXPECT_TRUE(absl::IsFailedPrecondition(unload("c")));  // Pinned.
  EXPECT_TRUE(absl::IsFailedPrecondition(unload("b")));  // Not hot.
  EXPECT_TRUE(absl::IsNotFound(unload("zz")));
  Answer b = AcquireNow(**r, "b");
  ASSERT_NE(b.lease, nullptr);
  const absl::Status busy = unload("b");
  EXPECT_TRUE(absl::IsFailedPrecondition(busy)) << busy;
  EXPECT_NE(std::string(busy.message()).find("in flight"), std::string::npos);
  b.lease.reset();
  EXPECT_TRUE(unload("b").ok());
  EXPECT_EQ(StateOf(**r, "b"), ModelState::kCold);
}

// A default (or pinned) model that fails to load stops the start, and the
// error says why (the loader's message), not only that it failed.
TEST(ModelRegistryTest, AFailedStartupLoadSaysWhy) {
  Fixture fx;
  fx.bytes = {{"a", 100}, {"b", 100}, {"c", 100}};
  fx.fail = "a";
  auto r = ModelRegistry::Create(ThreeModels(), fx.Loader(), {});
  ASSERT_TRUE(r.ok());
  const absl::Status st = (*r)->Start();
  EXPECT_TRUE(absl::IsUnavailable(st)) << st;
  EXPECT_NE(std::string(st.message()).find("bad file"), std::string::npos) << st;
}

TEST(ModelRegistryTest, UnknownModelsFailedLoadsAndBadSpecs) {
  Fixture fx;
  fx.bytes = {{"a", 100}, {"b", 100}, {"c", 100}};
  fx.fail = "b";
  auto r = ModelRegistry::Create(ThreeModels(), fx.Loader(), {});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Start().ok());
  Answer none = AcquireNow(**r, "nope");
  EXPECT_TRUE(absl::IsNotFound(none.status));
  EXPECT_NE(std::string(none.status.message()).find("'a', 'b', 'c'"), std::string::npos) << none.status;
  Answer failed = AcquireNow(**r, "b");
  EXPECT_EQ(failed.lease, nullptr);
  EXPECT_TRUE(absl::IsUnavailable(failed.status));
  EXPECT_NE(std::string(failed.status.message()).find("bad file"), std::string::npos) << failed.status;
  EXPECT_EQ(StateOf(**r, "b"), ModelState::kCold);
  EXPECT_NE((*r)->FormatMetrics().find("swiftlet_model_load_failures_total{model=\"b\"} 1"), std::string::npos);
  // An empty name is the default model.
  Answer dflt = AcquireNow(**r, "");
  ASSERT_NE(dflt.lease, nullptr);
  EXPECT_EQ(dflt.lease->name(), "a");

  EXPECT_FALSE(ModelRegistry::Create({}, fx.Loader(), {}).ok());
  EXPECT_FALSE(ModelRegistry::Create({{"x", "p1"}, {"x", "p2"}}, fx.Loader(), {}).ok());
  EXPECT_FALSE(ModelRegistry::Create({{"", "p1"}}, fx.Loader(), {}).ok());
}

TEST(ModelRegistryTest, AModelThatCanNeverFitIsRefusedAtOnce) {
  Fixture fx;
  fx.bytes = {{"a", 100}, {"b", 100}, {"c", 400}};
  auto specs = ThreeModels();
  specs[2].path = FileOf("big", 400);  // At least 400 with the default's 100: over 450.
  ModelRegistryOptions o;
  o.memory_budget_bytes = 450;
  auto r = ModelRegistry::Create(specs, fx.Loader(), o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Start().ok());
  const auto t0 = std::chrono::steady_clock::now();
  Answer c = AcquireNow(**r, "c", INT64_MAX);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(c.lease, nullptr);
  EXPECT_TRUE(absl::IsUnavailable(c.status)) << c.status;
  EXPECT_NE(std::string(c.status.message()).find("does not fit the memory budget"), std::string::npos) << c.status;
  EXPECT_EQ(c.retry_after_ms, 0);  // Retrying cannot help.
  EXPECT_EQ(fx.loads.load(), 1);   // Only the default's.
  EXPECT_NE(AcquireNow(**r, "b").lease, nullptr);  // The others still load.
}

TEST(ModelRegistryTest, ObserversDoNotCountAsUse) {
  // /metrics holds every hot model for a moment: that must not keep an
  // idle model from its keep-alive.
  Fixture fx;
  fx.bytes = {{"a", 100}, {"b", 100}, {"c", 100}};
  FakeClock clock(1'000'000'000);
  auto specs = ThreeModels();
  specs[1].keep_alive_ns = 10 * kNsPerSecond;
  ModelRegistryOptions o;
  o.clock = &clock;
  o.idle_check_ns = 1'000'000;
  auto r = ModelRegistry::Create(specs, fx.Loader(), o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Start().ok());
  ASSERT_NE(AcquireNow(**r, "b").lease, nullptr);
  for (int i = 0; i < 12; ++i) {
    clock.Advance(kNsPerSecond);
    EXPECT_GE((*r)->HotLeases().size(), 1u);  // A scrape.
  }
  EXPECT_TRUE(WaitForState(**r, "b", ModelState::kCold));
}

TEST(ModelRegistryTest, StartRefusesABudgetThatCannotHoldThePinnedModels) {
  Fixture fx;
  fx.bytes = {{"a", 100}, {"b", 100}, {"c", 100}};
  auto specs = ThreeModels();
  specs[1].pinned = true;
  ModelRegistryOptions o;
  o.memory_budget_bytes = 150;
  auto r = ModelRegistry::Create(specs, fx.Loader(), o);
  ASSERT_TRUE(r.ok());
  const absl::Status s = (*r)->Start();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("--memory-budget"), std::string::npos) << s;
}

TEST(ModelRegistryTest, AlternatingTrafficUnderABudgetOfTwoNeverFails) {
  // Many callers alternate between b and c while a budget holds only one
  // of them beside the default: every request gets its model, waiting
  // while the other is in use, then evicting it.
  Fixture fx;
  fx.bytes = {{"a", 100}, {"b", 100}, {"c", 100}};
  ModelRegistryOptions o;
  o.memory_budget_bytes = 250;
  auto r = ModelRegistry::Create(ThreeModels(), fx.Loader(), o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Start().ok());
  std::atomic<int> served{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const std::string name = (i + t) % 2 == 0 ? "b" : "c";
        Answer a = AcquireNow(**r, name);
        if (a.lease == nullptr) {
          ADD_FAILURE() << a.status;  // Waiting without a bound, none is refused.
          continue;
        }
        EXPECT_EQ(a.lease->name(), name);
        ++served;
        std::this_thread::sleep_for(std::chrono::microseconds(100));  // "Serving" it.
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(served.load(), 100);
  EXPECT_LE((*r)->memory_in_use_bytes(), 250u);
}

}  // namespace
}  // namespace swiftlet::server
