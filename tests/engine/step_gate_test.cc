// Several engines on one compute pool (engine/step_gate.h): turns go to the
// most urgent step, and sharing the pool changes no token.
#include "engine/step_gate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace swiftlet {
namespace {

void WaitForWaiters(const StepGate& gate, int64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (gate.waiting() < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(gate.waiting(), n);
}

TEST(StepGateTest, TurnsGoByDeadlineThenClassThenArrival) {
  StepGate gate(1);
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread> threads;
  {
    StepGate::Turn held = gate.Acquire(0, 0);
    // Arrive one by one (so arrival order is known): a batch step due
    // first; an interactive and a batch step due at the same time; two
    // interactive ones due last, in arrival order.
    const std::vector<std::pair<int, int64_t>> waiters = {{2, 5}, {0, 100}, {2, 50}, {0, 50}, {0, 100}};
    for (size_t i = 0; i < waiters.size(); ++i) {
      threads.emplace_back([&, i] {
        StepGate::Turn t = gate.Acquire(waiters[i].first, waiters[i].second);
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(static_cast<int>(i));
      });
      WaitForWaiters(gate, static_cast<int64_t>(i + 1));
    }
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 3, 2, 1, 4}));
  EXPECT_EQ(gate.turns(), 6);
  EXPECT_EQ(gate.waiting(), 0);
}

Request GreedyRequest(std::vector<int32_t> prompt, int max_tokens, std::shared_ptr<Recorder> sink,
                      LatencyClass latency_class) {
  Request r;
  r.prompt = std::move(prompt);
  r.options.sampling.temperature = 0;
  r.options.max_tokens = max_tokens;
  r.options.ignore_eos = true;
  r.options.latency_class = latency_class;
  r.sink = std::move(sink);
  return r;
}

TEST(StepGateTest, TwoEnginesOnOnePoolGiveTheTokensEachGivesAlone) {
  // Two engines (two "models": the same weights, separate caches) run at
  // once on one 2-thread pool; every request's tokens are the plain
  // loop's, greedy or drawn by its own sampler (each engine draws two
  // sampled rows a step on the pool, under its turn), and both engines
  // took turns on the gate.
  auto gate = std::make_shared<StepGate>(2);
  EngineConfig cfg;
  cfg.step_gate = gate;
  cfg.kv_memory_bytes = uint64_t{32} << 20;
  cfg.context = 256;
  cfg.scheduler.chunk_tokens = 16;
  cfg.slo_interactive = {60 * kNsPerSecond, 0};
  std::vector<std::unique_ptr<Engine>> engines;
  for (int i = 0; i < 2; ++i) {
    auto e = Engine::Create(*TinyModel().model, *TinyModel().tokenizer, cfg);
    ASSERT_TRUE(e.ok()) << e.status();
    engines.push_back(*std::move(e));
    engines.back()->Start();
  }
  std::vector<std::shared_ptr<Recorder>> sinks;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<SamplingParams> sampling;
  constexpr int kRequests = 8;
  for (int i = 0; i < kRequests; ++i) {
    prompts.push_back(Prompt(40 + i, 9 + 7 * i));
    sinks.push_back(std::make_shared<Recorder>());
    const LatencyClass c = i % 3 == 0 ? LatencyClass::kBatch : LatencyClass::kInteractive;
    Request r = GreedyRequest(prompts.back(), 10, sinks.back(), c);
    if ((i / 2) % 2 == 1) {
      r.options.sampling.temperature = 0.9f;
      r.options.sampling.top_k = 30;
      r.options.sampling.seed = 100 + i;
    }
    sampling.push_back(r.options.sampling);
    ASSERT_TRUE(engines[i % 2]->Submit(std::move(r)).accepted());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto busy = [&] {
    for (auto& e : engines) {
      const EngineState s = e->state();
      if (s.running + s.waiting > 0) return true;
    }
    return false;
  };
  while (busy() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_FALSE(busy());
  for (auto& e : engines) e->Stop();
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(sinks[i]->completes, 1) << i;
    const bool greedy = sampling[i].temperature == 0;
    EXPECT_EQ(sinks[i]->ids[0], greedy ? ReferenceGreedy(prompts[i], 10) : ReferenceSampled(prompts[i], 10, sampling[i]))
        << i;
  }
  // Two calibrations of two passes, then at least one step per token of
  // each engine's requests.
  EXPECT_GE(gate->turns(), 4 + 2 * 10);
  EXPECT_EQ(gate->waiting(), 0);
}

}  // namespace
}  // namespace swiftlet
