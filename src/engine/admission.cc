// Admission: what Submit decides on the caller's thread, from the state the
// engine thread publishes after every step (DESIGN.md, "Admission at
// enqueue").
#include <algorithm>
#include <cmath>

#include "core/str_cat.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "model/model.h"

namespace swiftlet {

namespace {

constexpr int32_t kMaxTopLogprobs = 20;

}  // namespace

LatencyTargets Engine::TargetsFor(const RequestOptions& o) const {
  LatencyTargets t = o.latency_class == LatencyClass::kBatch ? config_.slo_batch : config_.slo_interactive;
  auto tighten = [](int64_t base, int64_t asked) {
    if (asked <= 0) return base;
    return base <= 0 ? asked : std::min(base, asked);
  };
  t.ttft_ns = tighten(t.ttft_ns, o.targets.ttft_ns);
  t.tpot_ns = tighten(t.tpot_ns, o.targets.tpot_ns);
  return t;
}

absl::Status Engine::Validate(const Request& r) const {
  const RequestOptions& o = r.options;
  if (r.prompt.empty()) return absl::InvalidArgumentError("prompt: empty");
  for (int32_t id : r.prompt) {
    if (id < 0 || id >= model_.config().n_vocab) {
      return absl::InvalidArgumentError(StrCat("prompt: token id ", id, " is outside the vocabulary"));
    }
  }
  if (static_cast<int64_t>(r.prompt.size()) >= context_) {
    return absl::InvalidArgumentError(StrCat("prompt: ", r.prompt.size(),
                                             " tokens do not fit the context of ", context_));
  }
  if (o.max_tokens < 1) return absl::InvalidArgumentError("max_tokens: must be at least 1");
  if (o.min_tokens < 0 || o.min_tokens > o.max_tokens) {
    return absl::InvalidArgumentError("min_tokens: must be between 0 and max_tokens");
  }
  if (o.n < 1 || o.n > config_.max_n) {
    return absl::InvalidArgumentError(StrCat("n: must be between 1 and ", config_.max_n));
  }
  if (o.top_logprobs < -1 || o.top_logprobs > kMaxTopLogprobs) {
    return absl::InvalidArgumentError(StrCat("top_logprobs: must be between 0 and ", kMaxTopLogprobs));
  }
  SWIFTLET_RETURN_IF_ERROR(StopMatcher::Validate(o.stop));
  if (o.stop_token_ids.size() > 64) return absl::InvalidArgumentError("stop_token_ids: at most 64");
  return ValidateSamplingParams(o.sampling);
}

SubmitResult Engine::Submit(Request request) {
  SubmitResult result = Admit(request);
  if (!result.accepted()) metrics_.refusals.Add(result.refused);
  return result;
}

SubmitResult Engine::Admit(Request& request) {
  SubmitResult result;
  if (request.received_ns == 0) request.received_ns = clock_.NowNs();
  if (absl::Status s = Validate(request); !s.ok()) {
    result.refused = RefusalReason::kInvalid;
    result.message = std::string(s.message());
    return result;
  }
  const RequestOptions& o = request.options;
  const LatencyTargets targets = TargetsFor(o);
  const int64_t prompt = static_cast<int64_t>(request.prompt.size());
  const int64_t block = config_.kv_block_tokens;
  const int64_t max_len = std::min<int64_t>(context_, prompt + o.max_tokens);
  // Blocks for the request alone at its longest (choices share the prompt).
  const int64_t need_blocks = (prompt + block - 1) / block +
                              o.n * ((max_len - prompt + block - 1) / block + 1);

  std::lock_guard<std::mutex> lock(mu_);
  auto refuse = [&](RefusalReason why, std::string message, int64_t retry_ns) {
    result.refused = why;
    result.message = std::move(message);
    result.retry_after_ms = std::max<int64_t>(1, (retry_ns + kNsPerMs - 1) / kNsPerMs);
    return result;
  };
  const StepCostModel& cost = state_.cost;
  // Steps are capped by the TPOT target of the running sequences (the
  // interactive default stands for it: requests may only tighten it), so a
  // step prefills at most that budget less one token per running sequence.
  const int64_t budget = StepBudget(config_.scheduler.step_tokens, config_.slo_interactive.tpot_ns,
                                    state_.running, state_.cost);
  const int64_t per_step = std::max<int64_t>(1, budget - state_.running);
  const int64_t drain_ns = static_cast<int64_t>(
      std::ceil(static_cast<double>(state_.queued_prompt_tokens) / static_cast<double>(per_step)) *
      cost.PredictNs(std::max(budget, state_.running), state_.running));
  if (!accepting_) return refuse(RefusalReason::kNotReady, "the engine is not running", 1000 * kNsPerMs);
  if (state_.waiting >= config_.max_queue) {
    return refuse(RefusalReason::kQueueFull, StrCat("queue full (", config_.max_queue, " requests)"),
                  drain_ns);
  }
  if (state_.queued_prompt_tokens + prompt > config_.max_queued_tokens) {
    return refuse(RefusalReason::kQueuedTokens,
                  StrCat("prefill backlog full (", config_.max_queued_tokens, " tokens)"), drain_ns);
  }
  if (need_blocks > state_.kv_blocks_total) {
    result.refused = RefusalReason::kKvMemory;
    result.message = StrCat("the request needs up to ", need_blocks, " KV blocks; the cache holds ",
                            state_.kv_blocks_total);
    return result;
  }
  if (targets.ttft_ns > 0 && cost.per_token_ns > 0) {
    const int64_t estimate = EstimateTtftLocked(prompt, o.latency_class);
    const int64_t waited = clock_.NowNs() - request.received_ns;
    if (estimate + waited > targets.ttft_ns) {
      return refuse(RefusalReason::kTtftTarget,
                    StrCat("time to first token would be about ", estimate / kNsPerMs,
                           " ms, over the target of ", targets.ttft_ns / kNsPerMs, " ms"),
                    estimate + waited - targets.ttft_ns);
    }
  }
  auto a = std::make_unique<Active>();
  a->id = next_id_++;
  a->targets = targets;
  a->ttft_deadline_ns = request.received_ns + (targets.ttft_ns > 0 ? targets.ttft_ns : kNsPerSecond * 3600);
  a->request = std::move(request);
  result.id = a->id;
  state_.waiting += 1;
  state_.queued_prompt_tokens += prompt;
  state_.expected_prefill_tokens += state_.prefill_share * static_cast<double>(prompt);
  if (o.latency_class == LatencyClass::kInteractive) {
    state_.queued_interactive_prompt_tokens += prompt;
    state_.expected_interactive_prefill_tokens += state_.prefill_share * static_cast<double>(prompt);
  }
  incoming_.push_back(std::move(a));
  wake_.notify_one();
  return result;
}

int64_t Engine::EstimateTtftLocked(int64_t prompt_tokens, LatencyClass latency_class) const {
  // Steps are capped by the TPOT target of the running sequences (the
  // interactive default stands for it: requests may only tighten it), so a
  // step prefills at most that budget less one token per running sequence.
  const int64_t budget = StepBudget(config_.scheduler.step_tokens, config_.slo_interactive.tpot_ns,
                                    state_.running, state_.cost);
  const int64_t per_step = std::max<int64_t>(1, budget - state_.running);
  // What the prefix cache will supply is not computed: the queue's known
  // remainder, and the recent share for prompts not yet looked up.
  const double ahead = latency_class == LatencyClass::kInteractive ? state_.expected_interactive_prefill_tokens
                                                                   : state_.expected_prefill_tokens;
  const double work = std::max(1.0, ahead + state_.prefill_share * static_cast<double>(prompt_tokens));
  const double steps = std::ceil(work / static_cast<double>(per_step));
  const int64_t step_tokens =
      std::min<int64_t>(budget, state_.running + static_cast<int64_t>(std::ceil(work)));
  return static_cast<int64_t>(steps * state_.cost.PredictNs(step_tokens, state_.running));
}

int64_t Engine::EstimateTtftNs(int64_t prompt_tokens, LatencyClass latency_class) const {
  std::lock_guard<std::mutex> lock(mu_);
  return EstimateTtftLocked(std::max<int64_t>(1, prompt_tokens), latency_class);
}

void Engine::Publish(double step_ns, int64_t step_tokens, double around_ns, int64_t outputs) {
  std::lock_guard<std::mutex> lock(mu_);
  // Exponentially weighted updates of the linear cost model.
  constexpr double kWeight = 0.1;
  StepCostModel& m = state_.cost;
  if (outputs >= 4 && around_ns > 0) {
    // The work around the forward pass, per output row (with several rows,
    // so the part that does not grow with them weighs little).
    m.per_output_ns += kWeight * (around_ns / static_cast<double>(outputs) - m.per_output_ns);
  }
  if (step_tokens > 0 && step_ns > 0) {
    // Large steps refine the per-token cost, small ones the fixed part.
    if (step_tokens >= 16) {
      const double per = std::max(0.0, (step_ns - m.fixed_ns) / static_cast<double>(step_tokens));
      m.per_token_ns += kWeight * (per - m.per_token_ns);
    } else {
      const double fixed = std::max(0.0, step_ns - m.per_token_ns * static_cast<double>(step_tokens));
      m.fixed_ns += kWeight * (fixed - m.fixed_ns);
    }
  }
  int64_t waiting = static_cast<int64_t>(incoming_.size()), running = 0;
  int64_t queued = 0, queued_interactive = 0;
  double expected = 0, expected_interactive = 0;
  for (const auto& p : incoming_) {
    const int64_t n = static_cast<int64_t>(p->request.prompt.size());
    const bool interactive = p->request.options.latency_class == LatencyClass::kInteractive;
    queued += n;
    if (interactive) queued_interactive += n;
    expected += state_.prefill_share * static_cast<double>(n);
    if (interactive) expected_interactive += state_.prefill_share * static_cast<double>(n);
  }
  for (const auto& p : active_) {
    if (p->completed) continue;
    if (p->HasSequences()) {
      ++running;
    } else {
      ++waiting;
    }
    if (p->prompt_done) continue;
    const Choice& c = p->choices.front();
    const int64_t n = static_cast<int64_t>(c.tokens.size()) - c.computed;
    const bool interactive = p->request.options.latency_class == LatencyClass::kInteractive;
    // Not yet matched (no sequence): what the cache will likely supply comes off.
    const double share = c.seq >= 0 ? 1.0 : state_.prefill_share;
    queued += n;
    if (interactive) queued_interactive += n;
    expected += share * static_cast<double>(n);
    if (interactive) expected_interactive += share * static_cast<double>(n);
  }
  state_.waiting = waiting;
  state_.running = running;
  state_.queued_prompt_tokens = queued;
  state_.queued_interactive_prompt_tokens = queued_interactive;
  state_.expected_prefill_tokens = expected;
  state_.expected_interactive_prefill_tokens = expected_interactive;
  state_.kv_blocks_total = parts_->kv.blocks_total();
  state_.kv_blocks_available = parts_->kv.blocks_available();
  metrics_.requests_running.Set(running);
  metrics_.requests_waiting.Set(waiting);
  metrics_.kv_blocks_used.Set(parts_->kv.blocks_in_use());
  metrics_.kv_blocks_total.Set(parts_->kv.blocks_total());
}

}  // namespace swiftlet
