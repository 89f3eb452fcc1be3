// The engine's private types, shared by its .cc files (engine.cc: life
// cycle; admission.cc: admit, estimate, publish; engine_step.cc: reserve,
// preempt, forward; emission.cc: sample, stop rules, events). Not for use
// outside engine/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "engine/engine.h"
#include "engine/logprobs.h"
#include "engine/pooling.h"
#include "engine/sampling.h"
#include "engine/stop_matcher.h"
#include "kv/paged_kv_cache.h"
#include "model/batch.h"
#include "model/forward_context.h"
#include "text/detokenizer.h"

namespace swiftlet {

inline double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

// Whether the next row of a choice with these options, this sampler (null
// before its first token) and n_output tokens so far is an argmax row
// (Engine::TakesArgMax).
bool RowTakesArgMax(const RequestOptions& o, const Sampler* sampler, int64_t n_output);

// One output stream of a request: its KV sequence, its tokens (prompt then
// output) and its own sampler, detokenizer and stop matcher.
struct Engine::Choice {
  int32_t index = 0;
  int32_t seq = -1;              // KV sequence; -1 while waiting or preempted
  std::vector<int32_t> tokens;   // prompt + output; the last may be pending
  int64_t computed = 0;          // positions in the KV cache
  int64_t feed = 0;              // tokens fed in the current step
  int64_t n_output = 0;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<IncrementalDetokenizer> detok;
  std::unique_ptr<StopMatcher> stop;
  bool finished = false;
  int64_t first_token_ns = -1;
  int64_t last_token_ns = -1;
};

// A token a choice takes from a step's output: row `row` of the argmax
// ids, or an id drawn from row `row` of the logits (by DrawTokens, before
// any token of the step is emitted), with its logprobs when the request
// asks for them.
struct Engine::Take {
  Active* a;
  Choice* c;
  bool argmax;
  int64_t row;
  int32_t drawn = 0;
  // The draw may use the row itself as the sampler's scratch: no other
  // take draws from it and no logprobs read it after (DrawTokens).
  bool row_is_scratch = false;
  std::optional<TokenLogprobs> logprobs;
};

struct Engine::Active {
  uint64_t id = 0;
  Request request;
  LatencyTargets targets;
  int64_t ttft_deadline_ns = 0;
  int64_t ttft_estimate_ns = -1;  // Admission's prediction, from received.
  int64_t ttft_planned_ns = -1;   // The same times the error factor it planned with.
  int64_t order = 0;             // admission order
  std::vector<Choice> choices;   // one until the prompt is done, then n
  // Every choice has its own prompt: a group's shared part is done and
  // its branches forked (or the prompt of a plain request is done and its
  // n choices forked).
  bool prompt_done = false;
  bool cancelled = false;
  int64_t cached_tokens = 0;
  // What the prefix cache held of its prompt when it was admitted (the
  // estimate's until it is matched).
  int64_t cached_at_admission = 0;
  int64_t first_prefill_ns = -1;
  int64_t prompt_done_ns = -1;
  int64_t first_token_ns = -1;
  int64_t completion_tokens = 0;
  // Embedding requests: the pooled hidden rows so far (reset when the
  // request is preempted and recomputed).
  std::unique_ptr<PooledSum> pooled;
  bool completed = false;  // OnComplete sent; removed at the end of the step
  FinishReason finish_reason = FinishReason::kError;  // choice 0's

  bool HasBranches() const { return !request.branches.empty(); }
  bool HasSequences() const {
    return std::any_of(choices.begin(), choices.end(), [](const Choice& c) { return c.seq >= 0; });
  }
  bool AllFinished() const {
    return prompt_done &&
           std::all_of(choices.begin(), choices.end(), [](const Choice& c) { return c.finished; });
  }
};

// What the engine thread owns besides its requests: the host's threads
// (Engine::Create says whose), the paged cache, the forward context
// (backend and scratch), the last output and the batch.
struct Engine::Parts {
  std::unique_ptr<ComputePool> own_pool;  // Null when the step gate's is used.
  ComputePool& host_pool;
  PagedKvCache kv;
  ForwardContext fwd;
  ForwardOutput out;
  Batch batch;
};

}  // namespace swiftlet
