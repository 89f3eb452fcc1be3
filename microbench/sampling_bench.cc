// One Sampler::Sample call on a row of logits, for the settings a served
// request uses: temperature alone, top-k, top-p, min-p, and the usual
// top-k + top-p, at Llama's 32 k and Qwen's 152 k vocabularies. The logits
// are a fixed draw of N(0, 2) (a trained model's are peakier: top-p's head
// is then smaller, so these are the harder case). Each call samples a copy
// of the row, as the engine does.
//
//   build/microbench/sampling_bench [--benchmark_filter=top_k]
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/sampling.h"

namespace swiftlet {
namespace {

std::vector<float> Logits(int64_t n_vocab) {
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0, 2);
  std::vector<float> v(static_cast<size_t>(n_vocab));
  for (float& x : v) x = d(rng);
  return v;
}

void BM_Sample(benchmark::State& state, SamplingParams params) {
  const std::vector<float> logits = Logits(state.range(0));
  std::vector<float> row(logits.size());
  Sampler sampler(params);
  for (auto _ : state) {
    row = logits;
    benchmark::DoNotOptimize(sampler.Sample(row, {}));
  }
  state.SetItemsProcessed(state.iterations());
}

SamplingParams Params(float temperature, int32_t top_k, float top_p, float min_p) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.seed = 1;
  return p;
}

BENCHMARK_CAPTURE(BM_Sample, temperature, Params(0.8f, 0, 1.0f, 0.0f))->Arg(32000)->Arg(151936);
BENCHMARK_CAPTURE(BM_Sample, top_k_40, Params(0.8f, 40, 1.0f, 0.0f))->Arg(32000)->Arg(151936);
BENCHMARK_CAPTURE(BM_Sample, top_p_0_9, Params(0.8f, 0, 0.9f, 0.0f))->Arg(32000)->Arg(151936);
BENCHMARK_CAPTURE(BM_Sample, min_p_0_05, Params(0.8f, 0, 1.0f, 0.05f))->Arg(32000)->Arg(151936);
BENCHMARK_CAPTURE(BM_Sample, top_k_40_top_p_0_9, Params(0.8f, 40, 0.9f, 0.0f))->Arg(32000)->Arg(151936);
BENCHMARK_CAPTURE(BM_Sample, greedy, Params(0.0f, 0, 1.0f, 0.0f))->Arg(32000)->Arg(151936);

}  // namespace
}  // namespace swiftlet

BENCHMARK_MAIN();
