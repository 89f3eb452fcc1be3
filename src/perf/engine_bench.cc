#include "perf/engine_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "core/checked_math.h"
#include "core/number_format.h"
#include "core/str_cat.h"
#include "core/thread_pool.h"
#include "engine/sampling.h"
#include "kernels/cpu_features.h"
#include "kernels/cuda/cuda_backend.h"
#include "model/model.h"
#include "model/model_runner.h"
#include "perf/median.h"

namespace swiftlet {
namespace {

using SteadyClock = std::chrono::steady_clock;

// KV positions beyond the longest test, so a test never writes the last one.
constexpr int64_t kContextMargin = 16;

// Deterministic token ids (SplitMix64): the same every run and machine.
class TokenStream {
 public:
  TokenStream(uint64_t seed, int64_t n_vocab) : state_(seed), n_vocab_(n_vocab) {}
  int32_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<int32_t>(z % static_cast<uint64_t>(n_vocab_));
  }

 private:
  uint64_t state_;
  int64_t n_vocab_;
};

// One timed run: tokens a second, and the host's draw in µs a step
// (0 for greedy steps and prompts).
struct RunTiming {
  double tok_s = 0;
  double draw_us_per_step = 0;
};

// Runs the tests' forwards against one model, cache and backend.
class Runner {
 public:
  Runner(const Model& model, ModelRunner& runner, int64_t short_prompt, int64_t gen_tokens,
         const SamplingParams& sampling)
      : model_(model),
        runner_(runner),
        short_prompt_(short_prompt),
        gen_tokens_(gen_tokens),
        sampling_(sampling),
        sampled_(!SamplesArgMax(sampling)) {}

  // One run of `test`. Earlier runs' cache contents are overwritten
  // position by position, so no reset is needed.
  absl::StatusOr<RunTiming> Run(const EngineBenchTest& test, uint64_t seed) {
    TokenStream tokens(seed, model_.config().n_vocab);
    if (test.prompt) {
      Batch batch;
      const int64_t p = test.tokens_per_pass;
      for (int64_t t = 0; t < p; ++t)
        batch.Add(tokens.Next(), static_cast<int32_t>(t), 0, t == p - 1);
      const auto t0 = SteadyClock::now();
      SWIFTLET_RETURN_IF_ERROR(runner_.Forward(batch, out_));
      return RunTiming{static_cast<double>(p) / Seconds(SteadyClock::now() - t0), 0};
    }
    const int64_t b = test.batch;
    Batch prefill;  // Untimed: each sequence's short prompt.
    for (int64_t s = 0; s < b; ++s) {
      for (int64_t t = 0; t < short_prompt_; ++t) {
        prefill.Add(tokens.Next(), static_cast<int32_t>(t), static_cast<int32_t>(s), false);
      }
    }
    SWIFTLET_RETURN_IF_ERROR(runner_.Forward(prefill, out_));
    if (sampled_) MakeSamplers(b, seed);
    SteadyClock::duration drawing{};
    const auto t0 = SteadyClock::now();
    for (int64_t g = 0; g < gen_tokens_; ++g) {
      // Greedy steps, as the engine runs a greedy request's: each row's
      // argmax comes back, not its logits (Batch::argmax_rows). Sampled
      // steps: each row's logits, then the host's draw.
      Batch step;
      for (int64_t s = 0; s < b; ++s) {
        step.Add(tokens.Next(), static_cast<int32_t>(short_prompt_ + g), static_cast<int32_t>(s),
                 sampled_);
        if (!sampled_) step.argmax_rows.push_back(static_cast<int32_t>(s));
      }
      SWIFTLET_RETURN_IF_ERROR(runner_.Forward(step, out_));
      if (sampled_) {
        const auto d0 = SteadyClock::now();
        SWIFTLET_RETURN_IF_ERROR(DrawRows(b));
        drawing += SteadyClock::now() - d0;
      }
    }
    const double seconds = Seconds(SteadyClock::now() - t0);
    return RunTiming{static_cast<double>(b * gen_tokens_) / seconds,
                     1e6 * std::chrono::duration<double>(drawing).count() / static_cast<double>(gen_tokens_)};
  }

 private:
  static double Seconds(SteadyClock::duration d) {
    return std::max(1e-9, std::chrono::duration<double>(d).count());
  }

  // One Sampler a sequence, as the engine keeps one a request; seeded per
  // run, so runs draw the same ids.
  void MakeSamplers(int64_t b, uint64_t seed) {
    samplers_.clear();
    for (int64_t s = 0; s < b; ++s) {
      SamplingParams p = sampling_;
      p.seed = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(s);
      samplers_.push_back(std::make_unique<Sampler>(p));
    }
    drawn_.assign(static_cast<size_t>(b), 0);
  }

  // Draws every row of the last step as Engine::Draw draws a row that one
  // choice reads and no logprobs: the sampler truncates the row in place.
  absl::Status DrawRows(int64_t b) {
    const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
    auto draw = [&](int64_t s) {
      drawn_[static_cast<size_t>(s)] = samplers_[static_cast<size_t>(s)]->Sample({out_.MutableRow(s), n_vocab}, {});
    };
    ComputePool& pool = runner_.host_pool();
    if (b > 1 && pool.threads() > 1) {
      pool.Run(b, draw);
    } else {
      for (int64_t s = 0; s < b; ++s) draw(s);
    }
    for (int32_t id : drawn_) {
      if (id == Sampler::kNoToken) {
        return absl::InternalError("a decode row had no token to draw: its logits are all masked or not finite");
      }
    }
    return absl::OkStatus();
  }

  const Model& model_;
  ModelRunner& runner_;
  ForwardOutput out_;
  const int64_t short_prompt_;
  const int64_t gen_tokens_;
  const SamplingParams sampling_;
  const bool sampled_;
  std::vector<std::unique_ptr<Sampler>> samplers_;
  std::vector<int32_t> drawn_;
};

SamplingParams ToSamplingParams(const DecodeSampling& d) {
  SamplingParams p;
  p.temperature = d.temperature;
  p.top_k = d.top_k;
  p.top_p = d.top_p;
  p.min_p = d.min_p;
  return p;
}

uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  uint64_t r;
  return CheckedMul(a, b, &r) ? r : UINT64_MAX;
}

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

std::string GiB(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

}  // namespace

absl::StatusOr<EngineBenchPlan> PlanEngineBench(const EngineBenchOptions& o, const ModelConfig& c) {
  const int64_t ctx = c.n_ctx_train;
  if (o.prompt_tokens < 1 || o.prompt_tokens > ctx) {
    return absl::InvalidArgumentError(StrCat("--prompt-tokens: ", o.prompt_tokens,
                                             " is outside 1..", ctx, " (the model's context)"));
  }
  if (o.gen_tokens < 1 || o.gen_tokens > kMaxGenTokens) {
    return absl::InvalidArgumentError(
        StrCat("--gen-tokens: ", o.gen_tokens, " is outside 1..", kMaxGenTokens));
  }
  if (o.gen_tokens >= ctx) {
    return absl::InvalidArgumentError(
        StrCat("--gen-tokens: ", o.gen_tokens,
               " tokens after a prompt exceed the model's context of ", ctx));
  }
  if (o.batch_sizes.empty()) return absl::InvalidArgumentError("--batch: no batch sizes given");
  for (int64_t b : o.batch_sizes) {
    if (b < 1 || b > kMaxBatch) {
      return absl::InvalidArgumentError(StrCat("--batch: ", b, " is outside 1..", kMaxBatch));
    }
  }
  if (o.repeat < 1 || o.repeat > kMaxRepeat) {
    return absl::InvalidArgumentError(
        StrCat("--repeat: ", o.repeat, " is outside 1..", kMaxRepeat));
  }
  if (o.threads < 0 || o.threads > 1024) {
    return absl::InvalidArgumentError(StrCat("--threads: ", o.threads, " is outside 1..1024"));
  }
  if (absl::Status s = ValidateSamplingParams(ToSamplingParams(o.sampling)); !s.ok()) {
    return absl::InvalidArgumentError(StrCat("--temperature, --top-k, --top-p, --min-p: ", s.message()));
  }

  EngineBenchPlan plan;
  plan.short_prompt = std::min(kShortPrompt, ctx - o.gen_tokens);
  plan.n_ctx = std::min(o.prompt_tokens + o.gen_tokens + kContextMargin, ctx);
  std::vector<int64_t> batches;
  for (int64_t b : o.batch_sizes) {
    if (std::find(batches.begin(), batches.end(), b) == batches.end()) batches.push_back(b);
  }
  plan.n_slots = *std::max_element(batches.begin(), batches.end());

  const double p = static_cast<double>(o.prompt_tokens);
  const double g = static_cast<double>(o.gen_tokens);
  // Position t attends over t + 1 positions.
  plan.tests.push_back({StrCat("pp", o.prompt_tokens), true, 1, o.prompt_tokens, (p + 1) / 2});
  const double decode_context = static_cast<double>(plan.short_prompt) + (g + 1) / 2;
  for (int64_t b : batches) {
    const std::string name =
        b == 1 ? StrCat("tg", o.gen_tokens) : StrCat("tg", o.gen_tokens, "@b", b);
    plan.tests.push_back({name, false, b, b, decode_context});
  }

  // KV: n_layer x slots x positions x (K and V) rows of kv_dim elements.
  const uint64_t elem = o.kv_type == TensorType::kF32 ? 4 : 2;
  plan.kv_bytes = elem;
  for (int64_t f : {c.n_layer, plan.n_slots, plan.n_ctx, int64_t{2}, c.kv_dim()}) {
    plan.kv_bytes = SaturatingMul(plan.kv_bytes, static_cast<uint64_t>(f));
  }
  // Forward scratch (model.h's ForwardContext) for the largest batch: per
  // token x, h, tmp (n_embd), q, attn (q_dim), k, v (kv_dim), gate, up
  // (n_ff) floats, and the logits rows of a decode step.
  const int64_t max_rows = std::max(o.prompt_tokens, plan.n_slots * plan.short_prompt);
  const uint64_t per_row =
      4 * static_cast<uint64_t>(3 * c.n_embd + 2 * c.q_dim() + 2 * c.kv_dim() + 2 * c.n_ff);
  plan.activation_bytes = SaturatingAdd(
      SaturatingMul(per_row, static_cast<uint64_t>(max_rows)),
      SaturatingMul(4 * static_cast<uint64_t>(c.n_vocab), static_cast<uint64_t>(plan.n_slots)));
  const uint64_t total = SaturatingAdd(plan.kv_bytes, plan.activation_bytes);
  if (total > o.max_memory_bytes) {
    return absl::ResourceExhaustedError(
        StrCat("the KV cache (", plan.n_slots, " sequences x ", plan.n_ctx,
               " positions: ", GiB(plan.kv_bytes), ") and activations (",
               GiB(plan.activation_bytes), ") need more than the cap of ", GiB(o.max_memory_bytes),
               "; lower --batch, --prompt-tokens or --gen-tokens"));
  }
  return plan;
}

absl::StatusOr<EngineBenchReport> RunEngineBench(const EngineBenchOptions& o,
                                                 const BenchProgressFn& progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const bool gpu = o.cuda_gpu >= 0;
  SWIFTLET_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                            Model::Load(o.model_path, nullptr, gpu ? ComputeDevice::Cuda(o.cuda_gpu) : ComputeDevice::Cpu()));
  const ModelConfig& c = model->config();
  SWIFTLET_ASSIGN_OR_RETURN(const EngineBenchPlan plan, PlanEngineBench(o, c));

  EngineBenchReport report;
  report.cpu = CpuModelName();
  report.isa = KernelIsaName(ChosenKernelIsa());
  report.model_path = o.model_path;
  report.arch = std::string(ArchitectureName(c.arch));
  report.context_train = c.n_ctx_train;
  report.shape = ShapeOfConfig(c);
  report.kv_type = o.kv_type;
  report.sampling = o.sampling;
  SWIFTLET_ASSIGN_OR_RETURN(report.cost, ComputeModelCost(*model));

  const int threads = o.threads > 0 ? o.threads : PhysicalCores();
  report.host_threads = threads;
  // The GPU's limit: its HBM read bandwidth (1 GiB passes; 64 MiB quick).
  const uint64_t gpu_read_bytes = o.quick_limits ? uint64_t{64} << 20 : uint64_t{1} << 30;
  if (gpu) {
    report.cpu = "GPU";
    for (const CudaDeviceInfo& g : ListCudaDevices()) {
      if (g.index == o.cuda_gpu) report.cpu = g.name;
    }
    report.isa = "cuda";
    say("measuring the GPU's read bandwidth");
    SWIFTLET_ASSIGN_OR_RETURN(report.limits.read_bandwidth_gbs, MeasureCudaReadBandwidth(o.cuda_gpu, gpu_read_bytes));
    report.limits.read_measurements = 1;
    report.limits.read_buffer_bytes = gpu_read_bytes;
    report.limits.read_kernel = "cuda";
  } else {
    say(StrCat("measuring machine limits on ", threads, " threads",
               o.quick_limits ? " (quick)" : ""));
    // Its own pool, gone before the backend's starts.
    ComputePool pool(threads);
    SWIFTLET_ASSIGN_OR_RETURN(report.limits,
                              MeasureMachineLimits(pool, MachineLimitsOptions{o.quick_limits}));
  }
  say(StrCat("read ", Fixed(report.limits.read_bandwidth_gbs, 1), " GB/s, int8 ",
             Fixed(report.limits.int8_peak_gops, 0), " GOPS, fp32 ",
             Fixed(report.limits.fp32_peak_gflops, 0), " GFLOPS"));

  ModelRunnerOptions ro;
  ro.slots = plan.n_slots;
  ro.positions = plan.n_ctx;
  ro.kv_type = o.kv_type;
  ro.threads = threads;
  ro.max_kv_bytes = o.max_memory_bytes;
  SWIFTLET_ASSIGN_OR_RETURN(std::unique_ptr<ModelRunner> model_runner, ModelRunner::Create(*model, ro));
  Runner runner(*model, *model_runner, plan.short_prompt, o.gen_tokens, ToSamplingParams(o.sampling));

  // The bandwidth is measured again after every test: on a shared machine
  // it moves with the neighbours' load, and the limit is the best seen.
  auto remeasure = [&]() -> absl::Status {
    if (gpu) {
      SWIFTLET_ASSIGN_OR_RETURN(const double gbs, MeasureCudaReadBandwidth(o.cuda_gpu, gpu_read_bytes));
      report.limits.read_bandwidth_gbs = std::max(report.limits.read_bandwidth_gbs, gbs);
      ++report.limits.read_measurements;
      return absl::OkStatus();
    }
    ComputePool pool(threads);
    return RemeasureReadBandwidth(pool, MachineLimitsOptions{o.quick_limits}, report.limits);
  };
  for (size_t i = 0; i < plan.tests.size(); ++i) {
    const EngineBenchTest& test = plan.tests[i];
    EngineBenchResult r;
    r.test = test.name;
    r.prompt = test.prompt;
    r.batch = test.batch;
    r.tokens_per_pass = test.tokens_per_pass;
    r.mean_context = test.mean_context;
    std::vector<double> draw_us;
    for (int run = 0; run <= o.repeat; ++run) {
      const uint64_t seed = (uint64_t{i} << 32) + static_cast<uint64_t>(run);
      SWIFTLET_ASSIGN_OR_RETURN(const RunTiming t, runner.Run(test, seed));
      const std::string draw =
          !o.sampling.greedy() && !test.prompt ? StrCat(" (draw ", Fixed(t.draw_us_per_step, 1), " us a step)") : "";
      if (run == 0) {
        say(StrCat(test.name, ": warm-up ", Fixed(t.tok_s, 2), " tok/s", draw));
        continue;
      }
      say(StrCat(test.name, ": run ", run, "/", o.repeat, " ", Fixed(t.tok_s, 2), " tok/s", draw));
      r.runs.push_back(t.tok_s);
      draw_us.push_back(t.draw_us_per_step);
    }
    r.tok_s = Median(r.runs);
    r.draw_us_per_step = Median(draw_us);
    report.results.push_back(std::move(r));
    SWIFTLET_RETURN_IF_ERROR(remeasure());
  }
  say(StrCat("read bandwidth: best ", Fixed(report.limits.read_bandwidth_gbs, 1), " GB/s of ",
             report.limits.read_measurements, " measurements"));
  for (size_t i = 0; i < plan.tests.size(); ++i) {
    const EngineBenchTest& test = plan.tests[i];
    EngineBenchResult& r = report.results[i];
    r.memory_bound_tok_s = MemoryBoundTokS(
        report.limits.read_bandwidth_gbs, report.cost.weight_bytes_per_token, test.tokens_per_pass);
    r.compute_bound_tok_s = ComputeBoundTokS(report.cost, report.limits.int8_peak_gops,
                                             report.limits.fp32_peak_gflops, test.mean_context);
    // The GPU's compute peaks are not measured: its limit is the bandwidth's.
    const Roofline limit = gpu ? Roofline{r.memory_bound_tok_s, false}
                               : RooflineLimit(r.memory_bound_tok_s, r.compute_bound_tok_s);
    r.limit_tok_s = limit.tok_s;
    r.compute_bound = limit.compute_bound;
    r.pct_of_limit = PercentOfLimit(r.tok_s, r.limit_tok_s);
  }
  return report;
}

}  // namespace swiftlet
