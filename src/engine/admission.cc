// Admission: what Submit decides on the caller's thread, from the state the
// engine thread publishes after every step (DESIGN.md, "Admission at
// enqueue").
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>

#include "core/str_cat.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/ttft_estimator.h"
#include "model/model.h"

namespace swiftlet {

namespace {

constexpr int32_t kMaxTopLogprobs = 20;
// How far ahead the TTFT estimate simulates at most.
constexpr int64_t kMaxEstimateHorizonNs = 60 * kNsPerSecond;
// The share of a TTFT target admission plans to (see Admit).
constexpr double kTtftHeadroom = 0.9;

// A prefix warm-up's sink: nothing goes to a client; when it completes,
// another warm-up may start.
class WarmupSink final : public RequestSink {
 public:
  explicit WarmupSink(std::shared_ptr<std::atomic<bool>> in_flight) : in_flight_(std::move(in_flight)) {}
  void OnTokens(const TokenEvent&) override {}
  void OnFinish(int32_t, FinishReason, const std::string&) override {}
  void OnComplete(const Usage&, const Timings&) override { in_flight_->store(false); }

 private:
  std::shared_ptr<std::atomic<bool>> in_flight_;
};

}  // namespace

LatencyTargets Engine::TargetsFor(const RequestOptions& o) const {
  LatencyTargets t = config_.slo_interactive;
  if (o.latency_class == LatencyClass::kBatch) t = config_.slo_batch;
  if (o.latency_class == LatencyClass::kEmbedding) t = config_.slo_embedding;
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
  if (o.embedding != (o.latency_class == LatencyClass::kEmbedding)) {
    return absl::InvalidArgumentError("embedding requests, and only they, are of the embedding class");
  }
  if (o.embedding) {
    // Nothing is generated: the whole context is the input's.
    if (static_cast<int64_t>(r.prompt.size()) > context_) {
      return absl::InvalidArgumentError(StrCat("input: ", r.prompt.size(), " tokens; at most ", context_));
    }
    if (o.n != 1) return absl::InvalidArgumentError("n: an embedding request has one result");
    return absl::OkStatus();
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
  if (!r.branches.empty()) {
    if (static_cast<int64_t>(r.branches.size()) != o.n) {
      return absl::InvalidArgumentError("branches: one per choice (n)");
    }
    for (size_t i = 0; i < r.branches.size(); ++i) {
      const std::vector<int32_t>& b = r.branches[i];
      if (b.empty()) return absl::InvalidArgumentError(StrCat("branches[", i, "]: empty"));
      for (int32_t id : b) {
        if (id < 0 || id >= model_.config().n_vocab) {
          return absl::InvalidArgumentError(StrCat("branches[", i, "]: token id ", id, " is outside the vocabulary"));
        }
      }
      if (static_cast<int64_t>(r.prompt.size() + b.size()) >= context_) {
        return absl::InvalidArgumentError(StrCat("branches[", i, "]: ", r.prompt.size() + b.size(),
                                                 " prompt tokens do not fit the context of ", context_));
      }
    }
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
  const int64_t shared = static_cast<int64_t>(request.prompt.size());
  int64_t branch_tokens = 0, longest_branch = 0;
  for (const auto& b : request.branches) {
    branch_tokens += static_cast<int64_t>(b.size());
    longest_branch = std::max<int64_t>(longest_branch, static_cast<int64_t>(b.size()));
  }
  // Every prompt token asked (a group's shared part once).
  const int64_t prompt = shared + branch_tokens;
  const int64_t block = config_.kv_block_tokens;
  // Blocks for the request alone at its longest: the shared part once,
  // then each choice its own tokens past it (and a copy of the shared
  // partial block).
  const int64_t own = std::min<int64_t>(context_, shared + longest_branch + o.max_tokens) - shared;
  const int64_t need_blocks = o.embedding ? (shared + block - 1) / block
                                          : (shared + block - 1) / block + o.n * ((own + block - 1) / block + 1);

  auto refuse = [&](RefusalReason why, std::string message, int64_t retry_ns) {
    result.refused = why;
    result.message = std::move(message);
    result.retry_after_ms = std::max<int64_t>(1, (retry_ns + kNsPerMs - 1) / kNsPerMs);
    return result;
  };
  // What the prefix cache holds of the prompt now, read without the engine
  // thread; MatchPrefix attaches it when the request starts.
  const int64_t cached_now =
      config_.prefix_cache && !o.embedding
          ? parts_->kv.CachedPrefixTokens(request.cache_scope, request.prompt,
                                          static_cast<int64_t>(request.prompt.size()) - 1)
          : 0;
  EngineSnapshot snapshot;
  QueuedRequest candidate;
  double error_factor = 1.0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    error_factor = state_.ttft_error_factor;
    const StepCostModel& cost = state_.cost;
    // Time to work off the prefill backlog, for the Retry-After of the
    // queue limits.
    const OutputRows decodes{state_.running - state_.running_argmax, state_.running_argmax};
    const int64_t budget =
        StepBudget(config_.scheduler.step_tokens, config_.slo_interactive.tpot_ns, decodes, state_.cost);
    const int64_t per_step = std::max<int64_t>(1, budget - state_.running);
    const int64_t drain_ns = static_cast<int64_t>(
        std::ceil(static_cast<double>(state_.queued_prompt_tokens) / static_cast<double>(per_step)) *
        cost.PredictNs(std::max(budget, state_.running), decodes));
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
      snapshot = SnapshotLocked();
      candidate = DescribeNew(request, targets, cached_now);
    }
  }
  int64_t estimate_ns = -1;
  int64_t planned_ns = -1;
  if (snapshot.cost.per_token_ns > 0) {
    // Outside the lock: the engine thread publishes while this runs.
    const int64_t waited = clock_.NowNs() - request.received_ns;
    // Planned to a share of the target, as steps are to a share of the TPOT
    // target: the estimate's error is about a step either way, and the
    // first token still has to reach the client.
    const int64_t left = static_cast<int64_t>(kTtftHeadroom * static_cast<double>(targets.ttft_ns)) - waited;
    // Simulated past the target too, so a refusal can say when to retry.
    const int64_t horizon = std::min<int64_t>(2 * targets.ttft_ns, kMaxEstimateHorizonNs);
    const TtftEstimate est = left > 0 ? EstimateTtft(snapshot, candidate, std::max(horizon, left))
                                      : TtftEstimate{TtftEstimate::kNever};
    if (est.ttft_ns != TtftEstimate::kNever) estimate_ns = est.ttft_ns + waited;
    // Planned with the estimate's recent error (EngineState::
    // ttft_error_factor), and one simulated step of slack
    // (TtftEstimate::max_step_ns): better a refusal now than a first token
    // a step late. The request keeps the plain estimate, which is what the
    // error is measured against.
    const int64_t planned = est.ttft_ns == TtftEstimate::kNever
                                ? TtftEstimate::kNever
                                : std::llround(static_cast<double>(est.ttft_ns) * error_factor);
    const int64_t slack = est.ttft_ns == TtftEstimate::kNever ? 0 : est.max_step_ns;
    if (planned != TtftEstimate::kNever) planned_ns = planned + waited;
    if (planned == TtftEstimate::kNever || planned + slack > left) {
      // KV: its blocks are neither free now nor given back in time by the
      // requests ahead, though a slot would be.
      const bool memory = est.waited_for_kv && !est.waited_for_slot;
      const int64_t over = planned == TtftEstimate::kNever ? horizon : planned + slack - left;
      if (memory) {
        return refuse(RefusalReason::kKvMemory,
                      StrCat("the KV cache cannot hold the request's ", need_blocks,
                             " blocks within its time to first token target of ", targets.ttft_ns / kNsPerMs,
                             " ms"),
                      over);
      }
      std::string message =
          planned == TtftEstimate::kNever
              ? StrCat("time to first token would be over ", horizon / kNsPerMs, " ms, past the target of ",
                       targets.ttft_ns / kNsPerMs, " ms")
              : StrCat("time to first token would be about ", (planned + waited) / kNsPerMs,
                       " ms, over the target of ", targets.ttft_ns / kNsPerMs, " ms");
      int64_t retry_ns = over;
      if (WarmRefusedPrefix(request, snapshot, candidate, left, horizon, cached_now, &retry_ns)) {
        message += "; the prompt is too long for the target until its prefix is cached, and it is "
                   "being computed at batch priority: retry after the Retry-After time";
      }
      return refuse(RefusalReason::kTtftTarget, std::move(message), retry_ns);
    }
  }
  auto a = std::make_unique<Active>();
  a->ttft_estimate_ns = estimate_ns;
  a->ttft_planned_ns = planned_ns;
  a->cached_at_admission = cached_now;
  a->targets = targets;
  a->ttft_deadline_ns = request.received_ns + (targets.ttft_ns > 0 ? targets.ttft_ns : kNsPerSecond * 3600);
  a->request = std::move(request);
  std::lock_guard<std::mutex> lock(mu_);
  if (!accepting_) return refuse(RefusalReason::kNotReady, "the engine is not running", 1000 * kNsPerMs);
  a->id = next_id_++;  // Under the lock: callers on several threads admit at once.
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

bool Engine::WarmRefusedPrefix(const Request& request, const EngineSnapshot& snapshot,
                               const QueuedRequest& candidate, int64_t left, int64_t horizon,
                               int64_t cached_tokens, int64_t* retry_ns) {
  const RequestOptions& o = request.options;
  if (!config_.warm_refused_prefixes || !config_.prefix_cache || o.embedding ||
      o.latency_class == LatencyClass::kBatch) {
    return false;
  }
  // Every full block but the last token's is cached already: nothing to warm.
  const int64_t block = config_.kv_block_tokens;
  const int64_t cacheable = (static_cast<int64_t>(request.prompt.size()) - 1) / block * block;
  if (cached_tokens >= cacheable) return false;
  // Only a prompt that misses on an idle engine, as admission plans (times
  // the estimate's error): a refusal because of the work ahead is not
  // helped by adding work. Judged against the class's target, not one the
  // client tightened, so a client cannot have any prompt computed for it.
  RequestOptions plain = o;
  plain.targets = {};
  const int64_t class_ttft = TargetsFor(plain).ttft_ns;
  if (class_ttft <= 0) return false;
  const int64_t class_left = static_cast<int64_t>(kTtftHeadroom * static_cast<double>(class_ttft)) -
                             (clock_.NowNs() - request.received_ns);
  double error_factor = 1.0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    error_factor = state_.ttft_error_factor;
  }
  EngineSnapshot idle;
  idle.limits = snapshot.limits;
  for (const QueuedRequest& q : snapshot.requests) idle.limits.kv_blocks_available += q.kv_blocks;
  idle.cost = snapshot.cost;
  const TtftEstimate alone = EstimateTtft(idle, candidate, std::max({horizon, left, class_left}));
  if (alone.ttft_ns != TtftEstimate::kNever &&
      std::llround(static_cast<double>(alone.ttft_ns) * error_factor) + alone.max_step_ns <= class_left) {
    return false;
  }
  bool idle_warmup = false;
  if (!warmup_in_flight_->compare_exchange_strong(idle_warmup, true)) return false;
  Request warm;
  warm.prompt = request.prompt;  // A group's shared part: what its branches have in common.
  warm.cache_scope = request.cache_scope;  // Cached for this tenant only, as the request would be.
  warm.options.latency_class = LatencyClass::kBatch;
  warm.options.max_tokens = 1;
  warm.sink = std::make_shared<WarmupSink>(warmup_in_flight_);
  if (!Admit(warm).accepted()) {
    warmup_in_flight_->store(false);
    return false;
  }
  metrics_.prefix_warmups_total.Add();
  // When the warm-up should be done: its own estimate, at batch priority
  // behind the work held now.
  QueuedRequest batch = candidate;
  batch.latency_class = LatencyClass::kBatch;
  batch.ttft_deadline_ns = clock_.NowNs() + config_.slo_batch.ttft_ns;
  const TtftEstimate warm_est = EstimateTtft(snapshot, batch, kMaxEstimateHorizonNs);
  if (warm_est.ttft_ns != TtftEstimate::kNever) {
    *retry_ns = std::llround(static_cast<double>(warm_est.ttft_ns) * error_factor) + warm_est.max_step_ns;
  }
  return true;
}

QueuedRequest Engine::DescribeNew(const Request& r, const LatencyTargets& targets,
                                  int64_t cached_tokens) const {
  QueuedRequest q;
  q.latency_class = r.options.latency_class;
  q.ttft_deadline_ns = r.received_ns + (targets.ttft_ns > 0 ? targets.ttft_ns : kNsPerSecond * 3600);
  q.order = INT64_MAX;
  int64_t branch_tokens = 0;
  for (const auto& b : r.branches) branch_tokens += static_cast<int64_t>(b.size());
  // A group runs as a prompt of its shared part and every branch.
  q.prompt_tokens = static_cast<int64_t>(r.prompt.size()) + branch_tokens;
  // The recent share of prompts computed, or less when the cache is known to
  // hold more of this one: a cached prefix is not work, and a cold one is
  // not assumed warmer than average (requests queued with it may warm it).
  const int64_t prompt = static_cast<int64_t>(r.prompt.size());
  const int64_t expected =
      std::min<int64_t>(std::llround(state_.prefill_share * static_cast<double>(prompt)), prompt - cached_tokens);
  q.prefill_tokens = std::max<int64_t>(1, expected + branch_tokens);
  q.n = r.options.n;
  // An embedding is done with its prompt: nothing to decode.
  q.decode_tokens = r.options.embedding ? 0 : std::min<int64_t>(r.options.max_tokens, context_ - q.prompt_tokens);
  q.tpot_target_ns = targets.tpot_ns;
  // Its first row's kind stands for all of them: a greedy request with
  // min_tokens counts as sampled throughout (the dearer kind).
  q.argmax = RowTakesArgMax(r.options, nullptr, 0);
  return q;
}

QueuedRequest Engine::Describe(const Active& a) const {
  QueuedRequest q;
  const RequestOptions& o = a.request.options;
  const int64_t block = config_.kv_block_tokens;
  q.latency_class = o.latency_class;
  q.ttft_deadline_ns = a.ttft_deadline_ns;
  q.order = a.order;
  q.started = a.HasSequences();
  int64_t branch_tokens = 0;
  for (const auto& b : a.request.branches) branch_tokens += static_cast<int64_t>(b.size());
  // A group not forked yet still has its branches to compute.
  const int64_t unforked = a.prompt_done ? 0 : branch_tokens;
  q.prompt_tokens = static_cast<int64_t>(a.request.prompt.size()) + branch_tokens;
  q.tpot_target_ns = a.targets.tpot_ns;
  int32_t alive = 0;
  int64_t remaining = 0;
  for (const Choice& c : a.choices) {
    if (c.finished) continue;
    ++alive;
    remaining = std::max<int64_t>(remaining, std::min<int64_t>(o.max_tokens - c.n_output,
                                                             context_ - static_cast<int64_t>(c.tokens.size())));
    if (c.seq >= 0) {
      const int64_t own = &c == &a.choices.front() ? c.computed : c.computed - q.prompt_tokens;
      q.kv_blocks += (std::max<int64_t>(0, own) + block - 1) / block;
    }
  }
  // Decoding: every live choice holds its sequence. Otherwise (waiting,
  // prefilling, or preempted and to be recomputed) the first choice's
  // tokens still to compute, less what the prefix cache will likely give.
  const Choice& first = a.choices.front();
  q.argmax = TakesArgMax(a, first);
  q.prompt_done = a.prompt_done && q.started &&
                  static_cast<int64_t>(first.tokens.size()) - first.computed <= 1;
  q.cached_tokens = first.seq >= 0 ? first.computed : 0;
  if (q.prompt_done) {
    q.n = std::max<int32_t>(1, alive);
    q.decode_tokens = remaining;
  } else {
    const int64_t left = static_cast<int64_t>(first.tokens.size()) - first.computed;
    const int64_t expected =
        q.started ? left
                  : std::min<int64_t>(std::llround(state_.prefill_share * static_cast<double>(left)),
                             left - (first.computed == 0 ? a.cached_at_admission : 0));
    q.prefill_tokens = unforked + expected;
    q.prefill_tokens = std::max<int64_t>(1, q.prefill_tokens);
    q.n = a.prompt_done ? std::max<int32_t>(1, alive) : o.n;
    q.decode_tokens = o.embedding    ? 0
                      : a.prompt_done ? remaining
                                      : std::min<int64_t>(o.max_tokens, context_ - q.prompt_tokens);
  }
  return q;
}

EngineSnapshot Engine::SnapshotLocked() const {
  EngineSnapshot s;
  s.requests = state_.requests;
  for (const auto& p : incoming_) {
    s.requests.push_back(DescribeNew(p->request, p->targets, p->cached_at_admission));
  }
  s.limits.step_tokens = config_.scheduler.step_tokens;
  s.limits.chunk_tokens = config_.scheduler.chunk_tokens;
  s.limits.max_running = config_.max_running;
  s.limits.kv_block_tokens = config_.kv_block_tokens;
  s.limits.kv_blocks_available = state_.kv_blocks_available;
  s.cost = state_.cost;
  s.busy_ns = std::max<int64_t>(0, state_.step_end_ns - clock_.NowNs());
  return s;
}

int64_t Engine::EstimateTtftNs(int64_t prompt_tokens, LatencyClass latency_class) const {
  Request probe;
  probe.prompt.assign(static_cast<size_t>(std::max<int64_t>(1, prompt_tokens)), 0);
  probe.options.latency_class = latency_class;
  probe.options.max_tokens = 1;
  probe.received_ns = clock_.NowNs();
  EngineSnapshot snapshot;
  QueuedRequest candidate;
  double error_factor = 1.0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot = SnapshotLocked();
    candidate = DescribeNew(probe, TargetsFor(probe.options), 0);
    error_factor = state_.ttft_error_factor;
  }
  const TtftEstimate est = EstimateTtft(snapshot, candidate, kMaxEstimateHorizonNs);
  if (est.ttft_ns >= kMaxEstimateHorizonNs) return kMaxEstimateHorizonNs;
  // As admission plans it.
  return std::min<int64_t>(std::llround(static_cast<double>(est.ttft_ns) * error_factor), kMaxEstimateHorizonNs);
}

void Engine::Publish(double step_ns, int64_t step_tokens, double around_ns, OutputRows outputs) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.cost.Learn(step_ns, step_tokens, around_ns, outputs);
  int64_t waiting = static_cast<int64_t>(incoming_.size()), running = 0, running_argmax = 0;
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
      if (TakesArgMax(*p, p->choices.front())) ++running_argmax;
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
  state_.requests.clear();
  for (const auto& p : active_) {
    if (!p->completed) state_.requests.push_back(Describe(*p));
  }
  state_.waiting = waiting;
  state_.running = running;
  state_.running_argmax = running_argmax;
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
