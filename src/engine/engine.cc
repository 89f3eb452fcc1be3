#include "engine/engine.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/str_cat.h"
#include "core/thread_pool.h"
#include "engine/engine_internal.h"
#include "engine/step_gate.h"
#include "kv/kv_memory.h"
#include "kv/kv_row.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "text/tokenizer.h"

namespace swiftlet {

namespace {

constexpr int64_t kMaxContextCap = int64_t{1} << 15;  // positions per sequence by default

}  // namespace

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const Model& model,
                                                       const Tokenizer& tokenizer,
                                                       const EngineConfig& config) {
  const ModelConfig& c = model.config();
  EngineConfig cfg = config;
  if (cfg.threads <= 0) cfg.threads = PhysicalCores();
  if (cfg.kv_memory_bytes == 0) cfg.kv_memory_bytes = DefaultKvBytes(model.device());
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
  // The host's threads: the CPU forward's, and every engine's for drawing
  // the sampled rows of a step (DrawTokens), which a CPU forward's workers
  // are free for once it is done. Engines that share the cores (the step
  // gate) share its pool, and draw while their step's turn is held; an
  // engine alone has a pool of its own.
  std::unique_ptr<ComputePool> own_pool;
  ComputePool* host_pool = nullptr;
  if (cfg.step_gate != nullptr) {
    host_pool = &cfg.step_gate->pool();
  } else {
    own_pool = std::make_unique<ComputePool>(cfg.threads);
    host_pool = own_pool.get();
  }
  // Forwards run where the model's weights are.
  SWIFTLET_ASSIGN_OR_RETURN(ForwardContext fwd, model.device().is_cuda()
                                                    ? ForwardContext::Create(model.device(), cfg.threads)
                                                    : ForwardContext(*host_pool));
  SWIFTLET_ASSIGN_OR_RETURN(PagedKvCache kv,
                            PagedKvCache::Create(shape, cfg.kv_memory_bytes, &fwd.backend()));
  kv.set_scrub(cfg.scrub_kv);
  auto parts = std::unique_ptr<Parts>(new Parts{std::move(own_pool), *host_pool, std::move(kv), std::move(fwd), {}, {}});
  std::unique_ptr<Engine> e(new Engine(model, tokenizer, cfg, std::move(parts), context));
  return e;
}

Engine::Engine(const Model& model, const Tokenizer& tokenizer, const EngineConfig& config,
               std::unique_ptr<Parts> parts, int64_t context)
    : model_(model),
      tokenizer_(tokenizer),
      config_(config),
      clock_(config.clock != nullptr ? *config.clock : SystemClock()),
      parts_(std::move(parts)),
      context_(context) {
  state_.kv_blocks_total = parts_->kv.blocks_total();
  state_.kv_blocks_available = parts_->kv.blocks_available();
}

Engine::~Engine() { Stop(); }

uint64_t Engine::KvBytes() const {
  return static_cast<uint64_t>(parts_->kv.blocks_total()) * PagedKvCache::BlockBytes(parts_->kv.shape());
}

uint64_t Engine::DefaultKvBytes(ComputeDevice device, uint64_t weights_to_load) {
  if (!device.is_cuda()) return DefaultKvMemoryBytes();
  const absl::StatusOr<DeviceMemory> memory = QueryDeviceMemory(device);
  if (!memory.ok()) return kKvMemoryFloorBytes;
  const uint64_t free = memory->free_bytes > weights_to_load ? memory->free_bytes - weights_to_load : 0;
  return KvMemoryBytesForGpu(free, memory->total_bytes);
}

void Engine::Start() {
  Calibrate();
  thread_ = std::thread([this] { Loop(); });
}

void Engine::Calibrate() {
  const int64_t chunk = std::min<int64_t>(config_.scheduler.chunk_tokens, context_ - 1);
  auto seq = parts_->kv.CreateSequence();
  if (seq.ok() && parts_->kv.Reserve(*seq, chunk + 1).ok()) {
    Batch b;
    for (int64_t i = 0; i < chunk; ++i) {
      b.Add(static_cast<int32_t>(i % model_.config().n_vocab), static_cast<int32_t>(i), *seq,
            i == chunk - 1);
    }
    // On a shared pool: a turn per pass, taken before the clock is read,
    // so waiting for another model's step is not measured as this one's
    // cost; due within a second (a load waits on it), so steps due sooner
    // go first.
    StepGate::Turn turn;
    auto take_turn = [&] {
      turn = StepGate::Turn();
      if (config_.step_gate == nullptr) return;
      turn = config_.step_gate->Acquire(LatencyClassRank(LatencyClass::kBatch), clock_.NowNs() + kNsPerSecond);
    };
    take_turn();
    const int64_t t0 = clock_.NowNs();
    const bool ok1 = model_.Forward(b, parts_->kv, parts_->fwd, parts_->out).ok();
    if (config_.forward_hook_for_testing) config_.forward_hook_for_testing(b.size());
    const int64_t t1_forward = clock_.NowNs();
    take_turn();
    const int64_t t1 = clock_.NowNs();
    Batch one;
    one.Add(0, static_cast<int32_t>(chunk), *seq, true);
    const bool ok2 = model_.Forward(one, parts_->kv, parts_->fwd, parts_->out).ok();
    if (config_.forward_hook_for_testing) config_.forward_hook_for_testing(1);
    const int64_t t2 = clock_.NowNs();
    if (ok1 && ok2 && chunk > 1) {
      // The chunk's extra time over one token's, per extra token. On a busy
      // machine a small model's difference can drown in noise (the one-
      // token pass preempted longer than the chunk's): then the chunk's
      // mean time a token, an overestimate the steps correct, so the
      // estimates (and TTFT admission, which needs a per-token cost) work
      // from the start.
      double per_token = static_cast<double>((t1_forward - t0) - (t2 - t1)) / static_cast<double>(chunk - 1);
      if (!(per_token > 0)) per_token = static_cast<double>(std::max<int64_t>(1, t1_forward - t0)) / static_cast<double>(chunk);
      std::lock_guard<std::mutex> lock(mu_);
      state_.cost.per_token_ns = per_token;
      state_.cost.fixed_ns = std::max(0.0, static_cast<double>(t2 - t1) - per_token);
    }
  }
  if (seq.ok()) (void)parts_->kv.Free(*seq);
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
      auto news = [&] { return stop_ || !incoming_.empty() || !cancelled_.empty() || clear_prefix_cache_; };
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

void Engine::ClearPrefixCache() {
  std::lock_guard<std::mutex> lock(mu_);
  clear_prefix_cache_ = true;
  wake_.notify_one();
}

void Engine::TakeIncoming() {
  std::deque<std::unique_ptr<Active>> taken;
  bool clear = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    taken.swap(incoming_);
    std::swap(clear, clear_prefix_cache_);
  }
  if (clear) (void)parts_->kv.ClearPrefixCache();
  for (auto& a : taken) {
    a->order = next_order_++;
    // Room for every choice now: the forks at the end of the prompt must
    // not move choice 0 while it is being read.
    a->choices.reserve(static_cast<size_t>(a->request.options.n));
    Choice c;
    c.index = 0;
    c.tokens = a->request.prompt;
    a->choices.push_back(std::move(c));
    if (a->request.options.embedding) a->pooled = std::make_unique<PooledSum>(model_.config().n_embd);
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

int64_t Engine::KvBlocksAvailableForTesting() const { return parts_->kv.blocks_available(); }
int64_t Engine::KvBlocksTotalForTesting() const { return parts_->kv.blocks_total(); }

}  // namespace swiftlet
