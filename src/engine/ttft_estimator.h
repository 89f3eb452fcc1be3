// The time to first token a new request would see, predicted by running the
// scheduler's rules forward over a snapshot of the engine (what admission
// compares with the request's target, and what /load publishes).
//
// Pure arithmetic, no model or cache. The snapshot lists every request the
// engine holds (running or waiting) plus the candidate; each simulated step
// follows engine/scheduler.h and the engine's step:
//   - every decoding sequence gets its token; the step budget is
//     StepBudget() under the tightest TPOT target of the decoding sequences;
//   - the rest goes to prefill, in the scheduler's order (class, then TTFT
//     deadline, then arrival), at most chunk_tokens per sequence;
//   - a waiting request starts only while fewer than max_running sequences
//     hold KV and its first chunk's blocks are free; when it cannot, the
//     budget passes to the next one (the engine does the same);
//   - a request whose prompt completes samples its first token at the end
//     of that step, then decodes with its n sequences until max_tokens;
//     finishing frees its slots and blocks;
//   - a step costs StepCostModel::PredictNs(tokens, output rows by kind).
// The candidate's TTFT is the simulated time to the end of the step that
// completes its prompt. Requests are assumed to run to max_tokens (the
// estimate is an upper bound when they stop earlier); prefix-cache hits come
// in through prefill_tokens, the expected part of a prompt still to compute.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/request.h"
#include "engine/scheduler.h"

namespace swiftlet {

// One request as the estimator sees it.
struct QueuedRequest {
  LatencyClass latency_class = LatencyClass::kInteractive;
  int64_t ttft_deadline_ns = 0;  // Scheduler ordering.
  int64_t order = 0;             // Arrival order, for ties.
  bool started = false;          // Holds KV (a sequence) now.
  bool prompt_done = false;      // Decoding.
  int64_t prompt_tokens = 0;     // Whole prompt.
  int64_t prefill_tokens = 0;    // Expected prompt tokens still to compute.
  int32_t n = 1;                 // Sequences once decoding.
  int64_t decode_tokens = 0;     // Tokens per sequence still to generate.
  int64_t tpot_target_ns = 0;    // 0: none.
  int64_t kv_blocks = 0;         // Blocks it holds now (freed when it finishes).
  int64_t cached_tokens = 0;     // Positions its first sequence has in the cache.
  bool argmax = false;           // Its rows' tokens are the backend's argmax (greedy).
};

struct EstimatorLimits {
  int64_t step_tokens = 256;
  int64_t chunk_tokens = 128;
  int64_t max_running = 64;        // Sequences holding KV at once.
  int64_t kv_block_tokens = 16;
  int64_t kv_blocks_available = 0;  // Free now (and evictable cached blocks).
};

// Snapshot of running and waiting requests, from the engine.
struct EngineSnapshot {
  std::vector<QueuedRequest> requests;
  EstimatorLimits limits;
  StepCostModel cost;
  // Time until the step running now ends: nothing new joins before.
  int64_t busy_ns = 0;
};

struct TtftEstimate {
  // Predicted time from now to the candidate's first token; kNever when it
  // is not reached within the horizon.
  int64_t ttft_ns = 0;
  static constexpr int64_t kNever = INT64_MAX;
  int64_t steps = 0;            // Simulated steps.
  // The longest simulated step: a prompt can finish a step later than
  // simulated (a step runs longer, the running set changes), so admission
  // keeps this much slack.
  int64_t max_step_ns = 0;
  // The candidate waited for KV blocks (its slot was free but its blocks
  // were not) during the simulation: the refusal is then about memory.
  bool waited_for_kv = false;
  bool waited_for_slot = false;  // It waited for one of max_running slots.
};

// Simulates until the candidate's prompt is done or `horizon_ns` of
// simulated time has passed (then ttft_ns is kNever). The candidate has not
// started (started and prompt_done are ignored). Needs a cost model with a
// positive per-token cost; without one the estimate is 0.
TtftEstimate EstimateTtft(const EngineSnapshot& snapshot, const QueuedRequest& candidate,
                          int64_t horizon_ns);

}  // namespace swiftlet
