// One scheduler step's plan: which sequences get how many tokens.
//
// Pure logic, no model or cache: the engine describes each live sequence
// (decoding: needs one token; prefilling: needs its remaining prompt) and
// gets back how many tokens each is fed this step. Rules (DESIGN.md):
//   1. every decoding sequence gets its one token;
//   2. the rest of the step's token budget goes to prefill chunks, in order
//      of class (LatencyClassRank), then earliest TTFT deadline, then
//      arrival; a sequence gets at most chunk_tokens per step; one that
//      cannot run now (no slot, no KV) passes its share to the next;
//   3. the budget is capped so the predicted step time stays within the
//      tightest time-per-token target among the decoding sequences (never
//      below the decode tokens themselves: those are never dropped).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/request.h"
#include "engine/step_cost.h"

namespace swiftlet {

struct SchedulerConfig {
  int64_t step_tokens = 256;   // Tokens per forward pass at most.
  int64_t chunk_tokens = 128;  // Prefill tokens per sequence per step at most.
};

struct SequenceDemand {
  bool decoding = false;         // true: wants exactly one token
  int64_t pending_tokens = 0;    // prefill: tokens still to compute (> 0)
  LatencyClass latency_class = LatencyClass::kInteractive;
  int64_t ttft_deadline_ns = 0;  // for ordering prefill
  int64_t arrival_order = 0;     // for ties
  int64_t tpot_target_ns = 0;    // decoding: its target (0: none)
  bool argmax = false;           // decoding: its token is the backend's argmax
};

struct StepPlan {
  std::vector<int64_t> tokens;  // per demand, tokens fed this step (0: none)
  int64_t total = 0;
  int64_t budget = 0;  // after the TPOT cap
};

// The share of a TPOT target a step is planned to fill: the cost model is
// a linear fit and steps vary by about ±10% (cache state, the client's
// own work on the same cores), so planning to the full target lands half
// the steps over it. Measured with `swiftlet bench` against serve: at 1.0
// the overloaded TPOT p50 was 104-108 ms for a 100 ms target.
inline constexpr double kStepTimeHeadroom = 0.85;

// Tokens one step may hold: config.step_tokens, capped so the predicted
// step time stays within kStepTimeHeadroom of the tightest TPOT target of
// the decoding sequences (0: none), and never fewer than the decodes
// themselves (`decodes`: their output rows by kind). PlanStep and the
// admission's TTFT estimate both use it, so the estimate assumes the steps
// the scheduler will really run.
int64_t StepBudget(int64_t step_tokens, int64_t tightest_tpot_ns, OutputRows decodes,
                   const StepCostModel& cost);

// Asked, in prefill order, to feed demand `i` up to `tokens` tokens (which
// may need a KV slot and blocks); returns how many it fed. 0 passes the
// budget to the next demand, so no planned token is left to a sequence
// that cannot run.
using FeedFn = std::function<int64_t(size_t i, int64_t tokens)>;

// The step's plan. Without `feed`, every prefill is taken to run as planned.
StepPlan PlanStep(const std::vector<SequenceDemand>& demands, const SchedulerConfig& config,
                  const StepCostModel& cost, const FeedFn& feed = nullptr);

}  // namespace swiftlet
