#include "engine/engine.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/str_cat.h"
#include "core/thread_pool.h"
#include "engine/stop_matcher.h"
#include "kv/kv_memory.h"
#include "kv/kv_row.h"
#include "text/detokenizer.h"

namespace swiftlet {

namespace {

constexpr int32_t kMaxTopLogprobs = 20;
constexpr int64_t kMaxContextCap = int64_t{1} << 15;  // positions per sequence by default

double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

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

struct Engine::Active {
  uint64_t id = 0;
  Request request;
  LatencyTargets targets;
  int64_t ttft_deadline_ns = 0;
  int64_t order = 0;             // admission order
  std::vector<Choice> choices;   // one until the prompt is done, then n
  bool prompt_done = false;
  bool cancelled = false;
  int64_t cached_tokens = 0;
  int64_t first_prefill_ns = -1;
  int64_t prompt_done_ns = -1;
  int64_t first_token_ns = -1;
  int64_t completion_tokens = 0;
  bool completed = false;  // OnComplete sent; removed at the end of the step
  FinishReason finish_reason = FinishReason::kError;  // choice 0's

  bool HasSequences() const {
    return std::any_of(choices.begin(), choices.end(), [](const Choice& c) { return c.seq >= 0; });
  }
  bool AllFinished() const {
    return prompt_done &&
           std::all_of(choices.begin(), choices.end(), [](const Choice& c) { return c.finished; });
  }
};

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const Model& model,
                                                       const Tokenizer& tokenizer,
                                                       const EngineConfig& config) {
  const ModelConfig& c = model.config();
  EngineConfig cfg = config;
  if (cfg.threads <= 0) cfg.threads = PhysicalCores();
  if (cfg.kv_memory_bytes == 0) cfg.kv_memory_bytes = DefaultKvMemoryBytes();
  if (cfg.scheduler.step_tokens < 1 || cfg.scheduler.chunk_tokens < 1) {
    return absl::InvalidArgumentError("scheduler step and chunk sizes must be positive");
  }
  if (cfg.max_running < 1 || cfg.max_queue < 1 || cfg.max_n < 1) {
    return absl::InvalidArgumentError("engine limits must be positive");
  }
  if (const char* problem = KvTypeProblem(cfg.kv_type, c.head_dim); *problem != '\0') {
    return absl::InvalidArgumentError(StrCat("--kv-type ", NameOf(cfg.kv_type), ": ", problem,
                                             " (this model's is ", c.head_dim, ")"));
  }
  int64_t context = cfg.context > 0 ? cfg.context : std::min(c.n_ctx_train, kMaxContextCap);
  if (context < 2) return absl::InvalidArgumentError("context must allow at least two positions");
  PagedKvShape shape{c.n_layer, c.kv_dim(), cfg.kv_block_tokens, 0, cfg.kv_type,
                     std::max<int32_t>(cfg.max_running, 1) * 2};
  shape.n_blocks = PagedKvCache::BlocksForBytes(shape, cfg.kv_memory_bytes);
  if (shape.n_blocks < (context + cfg.kv_block_tokens - 1) / cfg.kv_block_tokens) {
    // The cache must hold at least one sequence at full context.
    const int64_t fit = shape.n_blocks * cfg.kv_block_tokens;
    if (fit < 2) {
      return absl::ResourceExhaustedError(StrCat("KV memory of ", cfg.kv_memory_bytes,
                                                 " bytes holds no block of ",
                                                 PagedKvCache::BlockBytes(shape), " bytes"));
    }
    context = fit;
  }
  SWIFTLET_ASSIGN_OR_RETURN(PagedKvCache kv, PagedKvCache::Create(shape, cfg.kv_memory_bytes));
  std::unique_ptr<Engine> e(
      new Engine(model, tokenizer, cfg, std::move(kv), MakeCpuBackend(cfg.threads), context));
  return e;
}

Engine::Engine(const Model& model, const Tokenizer& tokenizer, const EngineConfig& config,
               PagedKvCache kv, std::unique_ptr<Backend> backend, int64_t context)
    : model_(model),
      tokenizer_(tokenizer),
      config_(config),
      clock_(config.clock != nullptr ? *config.clock : SystemClock()),
      kv_(std::move(kv)),
      backend_(std::move(backend)),
      context_(context) {
  state_.kv_blocks_total = kv_.blocks_total();
  state_.kv_blocks_available = kv_.blocks_available();
}

Engine::~Engine() { Stop(); }

void Engine::Start() {
  // Calibrate the step cost model with two forward passes (a prefill chunk
  // and a single token) on a scratch sequence, so admission has figures
  // before the first real step.
  const int64_t chunk = std::min<int64_t>(config_.scheduler.chunk_tokens, context_ - 1);
  auto seq = kv_.CreateSequence();
  if (seq.ok() && kv_.Reserve(*seq, chunk + 1).ok()) {
    Batch b;
    for (int64_t i = 0; i < chunk; ++i) {
      b.Add(static_cast<int32_t>(i % model_.config().n_vocab), static_cast<int32_t>(i), *seq,
            i == chunk - 1);
    }
    const int64_t t0 = clock_.NowNs();
    const bool ok1 = model_.Forward(b, kv_, *backend_, fwd_, out_).ok();
    const int64_t t1 = clock_.NowNs();
    Batch one;
    one.Add(0, static_cast<int32_t>(chunk), *seq, true);
    const bool ok2 = model_.Forward(one, kv_, *backend_, fwd_, out_).ok();
    const int64_t t2 = clock_.NowNs();
    if (ok1 && ok2 && chunk > 1) {
      const double per_token = std::max(0.0, static_cast<double>((t1 - t0) - (t2 - t1)) /
                                                 static_cast<double>(chunk - 1));
      std::lock_guard<std::mutex> lock(mu_);
      state_.cost.per_token_ns = per_token;
      state_.cost.fixed_ns = std::max(0.0, static_cast<double>(t2 - t1) - per_token);
    }
  }
  if (seq.ok()) (void)kv_.Free(*seq);
  thread_ = std::thread([this] { Loop(); });
}

void Engine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    accepting_ = false;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Whatever is left is cancelled (the thread is gone: safe to touch).
  TakeIncoming();
  for (auto& a : active_) a->cancelled = true;
  ApplyCancellations();
}

void Engine::Loop() {
  bool progressed = true;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto news = [&] { return stop_ || !incoming_.empty() || !cancelled_.empty(); };
      if (active_.empty()) {
        wake_.wait(lock, news);
      } else if (!progressed) {
        // Work that cannot run yet (waiting for KV or a running slot):
        // look again soon, or at once when something arrives.
        wake_.wait_for(lock, std::chrono::milliseconds(2), news);
      }
      if (stop_) return;
    }
    progressed = Step();
  }
}

bool Engine::StepForTesting() { return Step(); }

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

void Engine::Cancel(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_.insert(id);
  }
  wake_.notify_one();
}

EngineState Engine::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

void Engine::TakeIncoming() {
  std::deque<std::unique_ptr<Active>> taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    taken.swap(incoming_);
  }
  for (auto& a : taken) {
    a->order = next_order_++;
    // Room for every choice now: the forks at the end of the prompt must
    // not move choice 0 while it is being read.
    a->choices.reserve(static_cast<size_t>(a->request.options.n));
    Choice c;
    c.index = 0;
    c.tokens = a->request.prompt;
    a->choices.push_back(std::move(c));
    active_.push_back(std::move(a));
  }
}

void Engine::ApplyCancellations() {
  std::unordered_set<uint64_t> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ids.swap(cancelled_);
  }
  for (auto& a : active_) {
    if (ids.count(a->id) != 0) a->cancelled = true;
    if (!a->cancelled) continue;
    a->prompt_done = true;  // no more forks
    for (Choice& c : a->choices) {
      if (!c.finished) FinishChoice(*a, c, FinishReason::kCancelled, "cancelled");
    }
  }
  for (auto& a : active_) CompleteIfDone(*a);
  std::erase_if(active_, [](const std::unique_ptr<Active>& a) { return a->completed; });
}

void Engine::FinishChoice(Active& a, Choice& c, FinishReason reason, const std::string& message) {
  if (c.seq >= 0) {
    (void)kv_.Free(c.seq);
    c.seq = -1;
  }
  c.finished = true;
  c.feed = 0;
  if (c.index == 0) a.finish_reason = reason;
  a.request.sink->OnFinish(c.index, reason, message);
}

void Engine::CompleteIfDone(Active& a) {
  if (!a.AllFinished()) return;
  Usage usage;
  usage.prompt_tokens = static_cast<int64_t>(a.request.prompt.size());
  usage.completion_tokens = a.completion_tokens;
  usage.cached_prompt_tokens = a.cached_tokens;
  Timings t;
  const int64_t now = clock_.NowNs();
  t.received_ns = a.request.received_ns;
  t.queued_ns = (a.first_prefill_ns >= 0 ? a.first_prefill_ns : now) - a.request.received_ns;
  t.prefill_ns = a.prompt_done_ns >= 0 && a.first_prefill_ns >= 0 ? a.prompt_done_ns - a.first_prefill_ns : 0;
  t.ttft_ns = a.first_token_ns >= 0 ? a.first_token_ns - a.request.received_ns : -1;
  const Choice& c0 = a.choices.front();
  t.tpot_ns = c0.n_output > 1 ? (c0.last_token_ns - c0.first_token_ns) / (c0.n_output - 1) : 0;
  t.e2e_ns = now - a.request.received_ns;
  metrics_.e2e_request_latency_seconds.Observe(Seconds(t.e2e_ns));
  if (a.first_prefill_ns >= 0) metrics_.queue_time_seconds.Observe(Seconds(t.queued_ns));
  if (c0.n_output > 1) metrics_.time_per_output_token_seconds.Observe(Seconds(t.tpot_ns));
  metrics_.requests_finished.Add(a.finish_reason);
  a.request.sink->OnComplete(usage, t);
  a.completed = true;
}

// Victims in order: batch before interactive, most recently admitted first.
bool Engine::PreemptVictim(const Active* keep) {
  Active* victim = nullptr;
  for (auto& p : active_) {
    Active* a = p.get();
    if (a == keep || a->completed || !a->HasSequences()) continue;
    if (victim == nullptr) {
      victim = a;
      continue;
    }
    const bool a_batch = a->request.options.latency_class == LatencyClass::kBatch;
    const bool v_batch = victim->request.options.latency_class == LatencyClass::kBatch;
    if (a_batch != v_batch ? a_batch : a->order > victim->order) victim = a;
  }
  if (victim == nullptr) return false;
  Preempt(*victim);
  return true;
}

void Engine::Preempt(Active& a) {
  for (Choice& c : a.choices) {
    if (c.seq >= 0) (void)kv_.Free(c.seq);
    c.seq = -1;
    c.computed = 0;
    c.feed = 0;
  }
  metrics_.preemptions_total.Add();
  std::lock_guard<std::mutex> lock(mu_);
  state_.preemptions += 1;
}

// Creates the KV sequences of a waiting (or preempted) request's choices and
// attaches what the prefix cache holds of their tokens.
bool Engine::EnsureSequences(Active& a) {
  for (Choice& c : a.choices) {
    if (c.finished || c.seq >= 0) continue;
    auto seq = kv_.CreateSequence();
    if (!seq.ok()) return false;
    c.seq = *seq;
    c.computed = 0;
    if (config_.prefix_cache) {
      auto matched = kv_.MatchPrefix(c.seq, c.tokens, static_cast<int64_t>(c.tokens.size()) - 1);
      if (matched.ok()) {
        c.computed = *matched;
        if (!a.prompt_done) a.cached_tokens = std::max(a.cached_tokens, *matched);
        metrics_.prefix_cache_queries_tokens.Add(static_cast<uint64_t>(c.tokens.size() - 1));
        metrics_.prefix_cache_hits_tokens.Add(static_cast<uint64_t>(*matched));
        std::lock_guard<std::mutex> lock(mu_);
        state_.prefix_queries_tokens += static_cast<int64_t>(c.tokens.size()) - 1;
        state_.prefix_hits_tokens += *matched;
        if (c.tokens.size() > 1) {
          const double share = 1.0 - static_cast<double>(*matched) / static_cast<double>(c.tokens.size() - 1);
          state_.prefill_share += 0.1 * (share - state_.prefill_share);
        }
      }
    }
  }
  return true;
}

bool Engine::Reserve(Choice& c, int64_t new_length, const Active& owner) {
  while (true) {
    if (kv_.Reserve(c.seq, new_length).ok()) return true;
    if (!PreemptVictim(&owner)) return false;
  }
}

bool Engine::Step() {
  const int64_t step_begin = clock_.NowNs();
  TakeIncoming();
  ApplyCancellations();
  if (active_.empty()) {
    Publish(0, 0, 0, 0);
    return false;
  }
  // Demands per unfinished choice, in admission order.
  struct Slot {
    Active* a;
    Choice* c;
  };
  std::vector<Slot> slots;
  std::vector<SequenceDemand> demands;
  int64_t running = 0;
  for (auto& p : active_) {
    for (Choice& c : p->choices) {
      if (c.finished) continue;
      if (c.seq >= 0) ++running;
      SequenceDemand d;
      const int64_t pending = static_cast<int64_t>(c.tokens.size()) - c.computed;
      d.decoding = c.seq >= 0 && p->prompt_done && pending == 1;
      d.pending_tokens = pending;
      d.latency_class = p->request.options.latency_class;
      d.ttft_deadline_ns = p->ttft_deadline_ns;
      d.arrival_order = p->order;
      d.tpot_target_ns = p->targets.tpot_ns;
      slots.push_back({p.get(), &c});
      demands.push_back(d);
    }
  }
  StepCostModel cost;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cost = state_.cost;
  }
  const StepPlan plan = PlanStep(demands, config_.scheduler, cost);

  // Reserve KV for every planned feed, decodes first (the plan lists them
  // in admission order), creating sequences for requests that start now.
  for (size_t i = 0; i < slots.size(); ++i) slots[i].c->feed = 0;
  auto reserve_all = [&](bool decodes) {
    for (size_t i = 0; i < slots.size(); ++i) {
      if (plan.tokens[i] == 0 || demands[i].decoding != decodes) continue;
      Active& a = *slots[i].a;
      Choice& c = *slots[i].c;
      if (c.finished || a.cancelled) continue;
      if (c.seq < 0) {
        if (running >= config_.max_running) continue;
        if (!EnsureSequences(a)) continue;
        for (const Choice& x : a.choices) running += x.seq >= 0 && &x != &c;
        ++running;
      }
      const int64_t want = std::min<int64_t>(plan.tokens[i], static_cast<int64_t>(c.tokens.size()) - c.computed);
      if (want <= 0) continue;
      if (!Reserve(c, c.computed + want, a)) {
        // Nothing left to preempt: a decode preempts its own request and
        // retries later; a prefill simply waits.
        if (decodes) Preempt(a);
        continue;
      }
      c.feed = want;
      if (a.first_prefill_ns < 0) a.first_prefill_ns = clock_.NowNs();
    }
  };
  reserve_all(true);
  reserve_all(false);

  // The batch: each fed choice's next tokens; the last position of a
  // choice's known tokens wants logits.
  batch_ = Batch();
  struct Output {
    Active* a;
    Choice* c;
  };
  std::vector<Output> outputs;
  for (Slot& s : slots) {
    Choice& c = *s.c;
    if (c.feed == 0 || c.seq < 0) continue;
    for (int64_t j = 0; j < c.feed; ++j) {
      const int64_t pos = c.computed + j;
      const bool last = pos == static_cast<int64_t>(c.tokens.size()) - 1;
      batch_.Add(c.tokens[pos], static_cast<int32_t>(pos), c.seq, last);
      if (last) outputs.push_back({s.a, &c});
    }
  }
  if (batch_.size() == 0) {
    Publish(0, 0, 0, 0);
    std::erase_if(active_, [](const std::unique_ptr<Active>& a) { return a->completed; });
    return false;
  }
  const int64_t t0 = clock_.NowNs();
  const absl::Status st = model_.Forward(batch_, kv_, *backend_, fwd_, out_);
  const int64_t now = clock_.NowNs();
  if (!st.ok()) {
    // A bug or a bad request that slipped through: fail what was in the step.
    for (Slot& s : slots) {
      if (s.c->feed > 0 && !s.c->finished) FinishChoice(*s.a, *s.c, FinishReason::kError, std::string(st.message()));
    }
    for (auto& a : active_) {
      if (!a->prompt_done && a->choices.front().finished) a->prompt_done = true;
      CompleteIfDone(*a);
    }
  } else {
    for (Slot& s : slots) {
      Choice& c = *s.c;
      if (c.feed == 0) continue;
      c.computed += c.feed;
      c.feed = 0;
      if (config_.prefix_cache) (void)kv_.Commit(c.seq, c.tokens);
    }
    for (size_t r = 0; r < outputs.size(); ++r) {
      Active& a = *outputs[r].a;
      Choice& c = *outputs[r].c;
      const float* logits = out_.Row(static_cast<int64_t>(r));
      if (!a.prompt_done) {
        // The prompt is in: fork the other choices off it; all sample from
        // this row.
        a.prompt_done = true;
        a.prompt_done_ns = now;
        metrics_.prompt_tokens_total.Add(a.request.prompt.size());
        const int32_t n = a.request.options.n;
        for (int32_t i = 1; i < n; ++i) {
          Choice f;
          f.index = i;
          f.tokens = c.tokens;
          f.computed = c.computed;
          auto seq = kv_.Fork(c.seq);
          if (seq.ok()) {
            f.seq = *seq;
          } else {
            f.computed = 0;  // recomputed when a sequence frees up
          }
          a.choices.push_back(std::move(f));
        }
        for (Choice& x : a.choices) Sample(a, x, logits, now);
      } else {
        Sample(a, c, logits, now);
      }
    }
  }
  for (auto& a : active_) CompleteIfDone(*a);
  std::erase_if(active_, [](const std::unique_ptr<Active>& a) { return a->completed; });
  const int64_t step_end = clock_.NowNs();
  Publish(static_cast<double>(now - t0), batch_.size(),
          static_cast<double>((t0 - step_begin) + (step_end - now)), static_cast<int64_t>(outputs.size()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_.computed_tokens += batch_.size();
    state_.steps += 1;
  }
  return true;
}

void Engine::Sample(Active& a, Choice& c, const float* logits, int64_t now) {
  if (c.finished) return;
  const int64_t n_vocab = model_.config().n_vocab;
  if (c.sampler == nullptr) {
    SamplingParams p = a.request.options.sampling;
    p.seed += static_cast<uint64_t>(c.index);
    c.sampler = std::make_unique<Sampler>(p);
    // The output continues the prompt: its leading space is part of the text.
    c.detok = std::make_unique<IncrementalDetokenizer>(tokenizer_, /*strip_leading_space=*/false);
    c.stop = std::make_unique<StopMatcher>(a.request.options.stop);
  }
  thread_local std::vector<float> scratch;
  scratch.assign(logits, logits + n_vocab);
  const RequestOptions& o = a.request.options;
  if (c.n_output < o.min_tokens) {
    // Too early to end: the ids that would end the choice cannot be drawn.
    if (!o.ignore_eos) {
      for (int32_t id : {tokenizer_.eos_id(), tokenizer_.vocab().eot_id}) {
        if (id >= 0 && id < n_vocab) scratch[id] = -INFINITY;
      }
    }
    for (int32_t id : o.stop_token_ids) {
      if (id >= 0 && id < n_vocab) scratch[id] = -INFINITY;
    }
  }
  const int32_t id = c.sampler->Sample(scratch, c.tokens);
  EmitToken(a, c, id, logits, now);
}

void Engine::EmitToken(Active& a, Choice& c, int32_t id, const float* logits, int64_t now) {
  const RequestOptions& o = a.request.options;
  a.completion_tokens += 1;
  const bool eog = !o.ignore_eos && tokenizer_.IsEog(id);
  const bool stop_id = std::find(o.stop_token_ids.begin(), o.stop_token_ids.end(), id) != o.stop_token_ids.end();
  TokenEvent ev;
  ev.choice = c.index;
  ev.time_ns = now;
  if (eog || stop_id) {
    // The stop token is not part of the output; release held text first.
    ev.text = c.stop->Push(c.detok->Flush()).emit + c.stop->Flush();
    if (!ev.text.empty()) a.request.sink->OnTokens(ev);
    FinishChoice(a, c, FinishReason::kStop, "");
    return;
  }
  c.tokens.push_back(id);
  c.n_output += 1;
  ev.first_token = c.first_token_ns < 0;
  metrics_.generation_tokens_total.Add();
  if (c.last_token_ns >= 0) metrics_.inter_token_latency_seconds.Observe(Seconds(now - c.last_token_ns));
  if (c.first_token_ns < 0) c.first_token_ns = now;
  if (a.first_token_ns < 0) {
    a.first_token_ns = now;
    metrics_.time_to_first_token_seconds.Observe(Seconds(now - a.request.received_ns));
  }
  c.last_token_ns = now;
  ev.ids.push_back(id);
  if (o.top_logprobs >= 0) {
    const int64_t n_vocab = model_.config().n_vocab;
    float max = -INFINITY;
    for (int64_t i = 0; i < n_vocab; ++i) max = std::max(max, logits[i]);
    double sum = 0;
    for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - max));
    const float log_z = max + static_cast<float>(std::log(sum));
    ev.chosen.push_back({id, logits[id] - log_z});
    std::vector<TokenLogprob> top;
    if (o.top_logprobs > 0) {
      std::vector<int32_t> ids(static_cast<size_t>(n_vocab));
      for (int32_t i = 0; i < n_vocab; ++i) ids[i] = i;
      const size_t k = std::min<size_t>(static_cast<size_t>(o.top_logprobs), ids.size());
      std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t x, int32_t y) {
        return logits[x] != logits[y] ? logits[x] > logits[y] : x < y;
      });
      for (size_t i = 0; i < k; ++i) top.push_back({ids[i], logits[ids[i]] - log_z});
    }
    ev.top.push_back(std::move(top));
  }
  StopMatcher::Result r = c.stop->Push(c.detok->Push(id));
  ev.text = r.emit;
  const bool length = c.n_output >= o.max_tokens ||
                      static_cast<int64_t>(c.tokens.size()) >= context_;
  if (!r.stopped && length) {
    // The last token: an incomplete character's bytes may still complete a
    // stop string.
    const StopMatcher::Result last = c.stop->Push(c.detok->Flush());
    ev.text += last.emit;
    r.stopped = last.stopped;
    if (!last.stopped) ev.text += c.stop->Flush();
  }
  a.request.sink->OnTokens(ev);
  if (r.stopped) {
    FinishChoice(a, c, FinishReason::kStop, "");
  } else if (length) {
    FinishChoice(a, c, FinishReason::kLength, "");
  }
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
  state_.kv_blocks_total = kv_.blocks_total();
  state_.kv_blocks_available = kv_.blocks_available();
  metrics_.requests_running.Set(running);
  metrics_.requests_waiting.Set(waiting);
  metrics_.kv_blocks_used.Set(kv_.blocks_in_use());
  metrics_.kv_blocks_total.Set(kv_.blocks_total());
}

}  // namespace swiftlet
