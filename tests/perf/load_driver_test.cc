#include "perf/load_driver.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace swiftlet {
namespace {

constexpr int64_t kMs = kNsPerMs;

int64_t Count(const std::vector<RequestRecord>& records,
              const std::function<bool(const RequestRecord&)>& pred) {
  return std::count_if(records.begin(), records.end(), pred);
}

// Offsets of n arrivals with exponential gaps at `rate` per second, drawn as
// the load generator's Poisson schedule draws them.
std::vector<int64_t> ExponentialOffsets(double rate, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gaps(rate);
  std::vector<int64_t> out;
  int64_t t = 0;
  for (int64_t i = 0; i < n; ++i) out.push_back(t += std::llround(gaps(rng) * 1e9));
  return out;
}

// ---- RunOpenLoop against a scripted queue on a fake clock ------------------

struct Step {
  enum Kind { kTokens, kText, kFinish, kComplete } kind;
  int64_t advance_ns = 0;  // Before the step.
  int32_t choice = 0;
  int n_ids = 1;
  FinishReason reason = FinishReason::kLength;
};

// Plays request n's script synchronously inside Submit, moving the clock.
// Every k-th submission (1-based) is refused after `decision_ns`.
class ScriptedQueue final : public RequestQueue {
 public:
  ScriptedQueue(FakeClock& clock, int64_t decision_ns, int refuse_every,
                std::function<std::vector<Step>(int64_t)> script)
      : clock_(clock), decision_ns_(decision_ns), refuse_every_(refuse_every),
        script_(std::move(script)) {}

  SubmitResult Submit(Request request) override {
    const int64_t n = submitted_++;
    submit_times.push_back(clock_.NowNs());
    clock_.Advance(decision_ns_);
    SubmitResult result;
    if (refuse_every_ > 0 && (n + 1) % refuse_every_ == 0) {
      result.refused = RefusalReason::kQueueFull;
      return result;
    }
    result.id = 1000 + static_cast<uint64_t>(n);
    for (const Step& s : script_(n)) {
      clock_.Advance(s.advance_ns);
      switch (s.kind) {
        case Step::kTokens:
        case Step::kText: {
          TokenEvent ev;
          ev.choice = s.choice;
          if (s.kind == Step::kTokens) ev.ids.assign(static_cast<size_t>(s.n_ids), 7);
          ev.text = "x";
          request.sink->OnTokens(ev);
          break;
        }
        case Step::kFinish:
          request.sink->OnFinish(s.choice, s.reason, "");
          break;
        case Step::kComplete:
          request.sink->OnComplete(Usage{}, Timings{});
          break;
      }
    }
    return result;
  }

  void Cancel(uint64_t id) override { cancelled.push_back(id); }

  std::vector<int64_t> submit_times;
  std::vector<uint64_t> cancelled;

 private:
  FakeClock& clock_;
  int64_t decision_ns_;
  int refuse_every_;
  std::function<std::vector<Step>(int64_t)> script_;
  int64_t submitted_ = 0;
};

SleepFn FakeSleep(FakeClock& clock) {
  return [&clock](int64_t until) {
    if (clock.NowNs() < until) clock.Set(until);
  };
}

// Request n: 1 + n % 4 tokens, (n % 3 + 1) ms apart, plus events the driver
// must ignore (another choice, a text-only event); stop when n is odd.
std::vector<Step> Script(int64_t n, bool complete = true) {
  std::vector<Step> steps;
  const int64_t gap = (n % 3 + 1) * kMs;
  for (int64_t t = 0; t < 1 + n % 4; ++t) {
    steps.push_back({Step::kTokens, gap});
    steps.push_back({Step::kTokens, 10, /*choice=*/1});
  }
  steps.push_back({Step::kText, 20});
  steps.push_back({Step::kFinish, 30, 0, 0, n % 2 ? FinishReason::kStop : FinishReason::kLength});
  steps.push_back({Step::kFinish, 40, 1, 0, FinishReason::kError});
  if (complete) steps.push_back({Step::kComplete, 50});
  return steps;
}

TEST(LoadDriverTest, OpenLoopRecordsScriptedTimesExactly) {
  constexpr int64_t kStart = 5 * kNsPerSecond;
  constexpr int64_t kDecision = 3000;  // ns
  constexpr int kRefuseEvery = 5;
  FakeClock clock(kStart);
  ScriptedQueue queue(clock, kDecision, kRefuseEvery, [](int64_t n) { return Script(n); });
  // Exponential gaps of mean 5 ms: some requests overlap the previous one's
  // script.
  const std::vector<int64_t> offsets = ExponentialOffsets(200, 300, 99);
  OpenLoopPlan plan;
  plan.arrivals_ns = offsets;
  plan.warmup_requests = 3;
  plan.make_request = [](int64_t) {
    Request r;
    r.prompt = {1, 2, 3};
    return r;
  };
  ASSERT_TRUE(ValidateOpenLoopPlan(plan).ok());
  const std::vector<RequestRecord> records = RunOpenLoop(queue, clock, FakeSleep(clock), plan);
  ASSERT_EQ(records.size(), 300u);

  // The fake's script replayed here.
  int64_t now = kStart;
  int lagged = 0;
  int64_t max_refused_after = 0;
  for (int64_t i = 0; i < 300; ++i) {
    SCOPED_TRACE(i);
    const RequestRecord& r = records[static_cast<size_t>(i)];
    const int64_t arrival = kStart + offsets[static_cast<size_t>(i)];
    EXPECT_EQ(r.index, i);
    EXPECT_EQ(r.warmup, i < 3);
    ASSERT_EQ(r.arrival_ns, arrival);
    lagged += now > arrival;
    now = std::max(now, arrival);
    EXPECT_EQ(queue.submit_times[static_cast<size_t>(i)], now);
    now += kDecision;
    if ((i + 1) % kRefuseEvery == 0) {
      EXPECT_TRUE(r.refused);
      EXPECT_EQ(r.refusal, RefusalReason::kQueueFull);
      EXPECT_EQ(r.refused_after_ns, now - arrival);
      max_refused_after = std::max(max_refused_after, now - arrival);
      EXPECT_EQ(r.finish_ns, -1);
      EXPECT_TRUE(r.token_times_ns.empty());
      continue;
    }
    EXPECT_FALSE(r.refused);
    EXPECT_TRUE(r.finished_ok());
    std::vector<int64_t> tokens;
    for (const Step& s : Script(i)) {
      now += s.advance_ns;
      if (s.kind == Step::kTokens && s.choice == 0) tokens.push_back(now);
      if (s.kind == Step::kComplete) {
        EXPECT_EQ(r.finish_ns, now);
      }
    }
    EXPECT_EQ(r.token_times_ns, tokens);
    EXPECT_EQ(r.first_token_ns, tokens.front());
    EXPECT_EQ(r.output_tokens, 1 + i % 4);
    EXPECT_EQ(r.reason, i % 2 ? FinishReason::kStop : FinishReason::kLength);
  }
  // Both branches of the schedule were exercised: on time and behind.
  EXPECT_GT(lagged, 10);
  EXPECT_LT(lagged, 290);
  EXPECT_TRUE(queue.cancelled.empty());
  EXPECT_EQ(clock.NowNs(), now);  // No drain wait: everything had completed.

  EXPECT_EQ(Count(records, [](const RequestRecord& r) { return r.refused; }), 60);  // 4, 9, ..., 299.
  EXPECT_EQ(Count(records, [](const RequestRecord& r) { return r.finished_ok(); }), 240);
  EXPECT_GT(max_refused_after, kDecision);  // At least one refusal came late.
}

TEST(LoadDriverTest, DrainTimeoutCancelsUnfinished) {
  FakeClock clock(0);
  // Every third request never completes.
  ScriptedQueue queue(clock, 0, 0, [](int64_t n) { return Script(n, n % 3 != 0); });
  OpenLoopPlan plan;
  for (int64_t i = 0; i < 9; ++i) plan.arrivals_ns.push_back(i * 100 * kMs);
  plan.drain_timeout_ns = 2 * kNsPerSecond;
  plan.drain_poll_ns = 7 * kMs;
  plan.make_request = [](int64_t) { return Request{}; };
  const std::vector<RequestRecord> records = RunOpenLoop(queue, clock, FakeSleep(clock), plan);
  const int64_t last_submit_done = queue.submit_times.back() + [] {
    int64_t t = 0;
    for (const Step& s : Script(8)) t += s.advance_ns;
    return t;
  }();
  // Waited exactly the drain timeout after the last submission, then
  // cancelled requests 0, 3 and 6.
  EXPECT_EQ(clock.NowNs(), last_submit_done + 2 * kNsPerSecond);
  EXPECT_EQ(queue.cancelled, (std::vector<uint64_t>{1000, 1003, 1006}));
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].finish_ns < 0, i % 3 == 0) << i;
    EXPECT_FALSE(records[i].token_times_ns.empty()) << i;
  }
  EXPECT_EQ(Count(records, [](const RequestRecord& r) { return r.finished_ok(); }), 6);
}

TEST(LoadDriverTest, SimultaneousArrivalsSubmitAtOnce) {
  FakeClock clock(0);
  ScriptedQueue queue(clock, 0, 0, [](int64_t) { return std::vector<Step>{{Step::kComplete}}; });
  OpenLoopPlan plan;
  plan.arrivals_ns.assign(5, 0);
  plan.make_request = [](int64_t) { return Request{}; };
  for (const RequestRecord& r : RunOpenLoop(queue, clock, FakeSleep(clock), plan)) {
    EXPECT_EQ(r.arrival_ns, 0);
    EXPECT_EQ(r.finish_ns, 0);
  }
}

TEST(LoadDriverTest, ValidatePlan) {
  OpenLoopPlan p;
  p.make_request = [](int64_t) { return Request{}; };
  p.arrivals_ns = {0, 5};
  EXPECT_TRUE(ValidateOpenLoopPlan(p).ok());
  auto message = [](OpenLoopPlan q) { return std::string(ValidateOpenLoopPlan(q).message()); };
  OpenLoopPlan q = p;
  q.arrivals_ns = {5, 4};
  EXPECT_NE(message(q).find("arrivals_ns"), std::string::npos);
  q = p;
  q.arrivals_ns = {-1, 4};
  EXPECT_NE(message(q).find("arrivals_ns"), std::string::npos);
  q = p;
  q.warmup_requests = 3;
  EXPECT_NE(message(q).find("warmup_requests"), std::string::npos);
  q = p;
  q.make_request = nullptr;
  EXPECT_NE(message(q).find("make_request"), std::string::npos);
  q = p;
  q.drain_timeout_ns = 0;
  EXPECT_NE(message(q).find("drain_timeout_ns"), std::string::npos);
}

// ---- Events from another thread, on the system clock ----------------------

// Accepts everything and plays three tokens per request on its own thread.
class ThreadedQueue final : public RequestQueue {
 public:
  ThreadedQueue() : worker_([this] { Loop(); }) {}
  ~ThreadedQueue() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  SubmitResult Submit(Request request) override {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(std::move(request.sink));
    cv_.notify_all();
    SubmitResult r;
    r.id = ++next_id_;
    return r;
  }
  void Cancel(uint64_t) override {}

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return done_ || !pending_.empty(); });
      if (pending_.empty()) return;
      std::shared_ptr<RequestSink> sink = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      TokenEvent ev;
      ev.ids = {1};
      for (int i = 0; i < 3; ++i) sink->OnTokens(ev);
      sink->OnFinish(0, FinishReason::kLength, "");
      sink->OnComplete(Usage{}, Timings{});
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<RequestSink>> pending_;
  uint64_t next_id_ = 0;
  bool done_ = false;
  std::thread worker_;
};

TEST(LoadDriverTest, EventsFromEngineThread) {
  ThreadedQueue queue;
  OpenLoopPlan plan;
  for (int64_t i = 0; i < 200; ++i) plan.arrivals_ns.push_back(i * 50'000);  // 20000 per second.
  plan.make_request = [](int64_t) { return Request{}; };
  const std::vector<RequestRecord> records = RunOpenLoop(queue, SystemClock(), SystemSleep(), plan);
  EXPECT_EQ(Count(records, [](const RequestRecord& r) { return r.finished_ok(); }), 200);
  for (const RequestRecord& r : records) {
    EXPECT_EQ(r.output_tokens, 3);
    EXPECT_EQ(r.token_times_ns.size(), 3u);
    EXPECT_GE(r.first_token_ns, r.arrival_ns);
    EXPECT_LE(r.token_times_ns.back(), r.finish_ns);
    EXPECT_EQ(r.reason, FinishReason::kLength);
  }
}

}  // namespace
}  // namespace swiftlet
