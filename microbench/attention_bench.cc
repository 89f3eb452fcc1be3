// Attention workbench: the backend's fused attention over an F16 KV cache
// of TinyLlama's shape (32 query heads, 4 KV heads, head_dim 64), for the
// three shapes a server runs: one decode row per sequence for a batch of
// 16 sequences (short and long contexts, and scores spread as widely as a
// trained model's) and a 128-token prompt. Every case
// is first checked against attention computed in double from the
// definition (softmax of scaled dot products over the widened keys), then
// timed.
//
//   build/bench/attention_bench [--benchmark_filter=decode]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu_features.h"
#include "kernels/float16.h"

namespace swiftlet {
namespace {

constexpr int64_t kHeads = 32, kKvHeads = 4, kDim = 64;
constexpr int64_t kKvDim = kKvHeads * kDim;

struct Case {
  int64_t sequences;  // Each with its own keys.
  int64_t rows_per_sequence;
  int64_t context;    // Keys per sequence; a sequence's rows are its last positions.
  // Standard deviation of the queries' elements (keys' is 1): at 1 the
  // scores spread over a few units; at 30 many fall more than 87 below
  // their row's maximum, as behind a trained model's attention sinks.
  float query_scale = 1.0f;
};

void BM_Attention(benchmark::State& state, Case c, int threads) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0, 1);
  // One KV block per sequence (its K rows, then its V rows), rows of
  // kv_dim F16 values: the contiguous cache's layout.
  std::vector<std::vector<uint16_t>> keys(c.sequences), values(c.sequences);
  const size_t run = static_cast<size_t>(c.context * kKvDim);  // Elements of one K (or V) run.
  std::vector<uint16_t> cache(2 * run * c.sequences);
  std::vector<int32_t> table(c.sequences);
  for (int64_t s = 0; s < c.sequences; ++s) {
    keys[s].resize(run);
    values[s].resize(run);
    for (uint16_t& x : keys[s]) x = Fp32ToFp16(d(rng));
    for (uint16_t& x : values[s]) x = Fp32ToFp16(d(rng));
    std::copy(keys[s].begin(), keys[s].end(), cache.begin() + 2 * run * s);
    std::copy(values[s].begin(), values[s].end(), cache.begin() + 2 * run * s + run);
    table[s] = static_cast<int32_t>(s);
  }
  const int64_t n_rows = c.sequences * c.rows_per_sequence;
  std::vector<int32_t> positions(n_rows), table_start(n_rows);
  for (int64_t t = 0; t < n_rows; ++t) {
    table_start[t] = static_cast<int32_t>(t / c.rows_per_sequence);
    positions[t] = static_cast<int32_t>(c.context - c.rows_per_sequence + t % c.rows_per_sequence);
  }
  const KvLayer layer{reinterpret_cast<uint8_t*>(cache.data()), 2 * run * 2, 0, run * 2, c.context,
                      kKvDim * 2, TensorType::kF16};
  const KvBatch kv{layer, table.data(), table_start.data()};
  std::vector<float> q(n_rows * kHeads * kDim), out(q.size());
  for (float& x : q) x = c.query_scale * d(rng);
  const AttentionShape shape{kHeads, kKvHeads, kDim, 1.0f / std::sqrt(static_cast<float>(kDim))};
  auto backend = MakeCpuBackend(threads);
  backend->Attention(q.data(), n_rows, positions.data(), kv, shape, out.data());
  // The definition, in double, on a sample of rows and heads.
  for (int64_t t = 0; t < n_rows; t += 5) {
    const int64_t s = t / c.rows_per_sequence;
    for (int64_t h = 0; h < kHeads; h += 3) {
      const int64_t kvh = h / (kHeads / kKvHeads);
      const float* qh = q.data() + (t * kHeads + h) * kDim;
      std::vector<double> score(positions[t] + 1);
      double max = -INFINITY;
      for (int64_t j = 0; j <= positions[t]; ++j) {
        double dot = 0;
        for (int64_t i = 0; i < kDim; ++i) dot += qh[i] * Fp16ToFp32(keys[s][j * kKvDim + kvh * kDim + i]);
        score[j] = dot * shape.scale;
        max = std::max(max, score[j]);
      }
      double sum = 0;
      for (double& x : score) sum += (x = std::exp(x - max));
      for (int64_t i = 0; i < kDim; ++i) {
        double want = 0;
        for (int64_t j = 0; j <= positions[t]; ++j) {
          want += score[j] / sum * Fp16ToFp32(values[s][j * kKvDim + kvh * kDim + i]);
        }
        if (std::abs(out[(t * kHeads + h) * kDim + i] - want) > 1e-4 * (1 + std::abs(want))) {
          state.SkipWithError("attention differs from its definition");
          return;
        }
      }
    }
  }
  for (auto _ : state) {
    backend->Attention(q.data(), n_rows, positions.data(), kv, shape, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  // Multiply-adds: QK^T and PV, per row per head per attended key.
  double macs = 0;
  for (int64_t t = 0; t < n_rows; ++t) macs += 2.0 * kHeads * kDim * (positions[t] + 1);
  state.counters["GFLOPS"] = benchmark::Counter(2 * macs * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void Register() {
  const struct {
    const char* name;
    Case c;
  } cases[] = {{"decode-b16-ctx48", {16, 1, 48}},
               {"decode-b16-ctx512", {16, 1, 512}},
               {"decode-b16-ctx512-wide-scores", {16, 1, 512, 30.0f}},
               {"prompt-128", {1, 128, 128}}};
  for (const auto& x : cases) {
    for (int threads : {1, 2}) {
      const std::string name = std::string(x.name) + "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), BM_Attention, x.c, threads)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime()
          ->MinTime(0.3);
    }
  }
}

}  // namespace
}  // namespace swiftlet

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  swiftlet::Register();
  std::printf("cpu features: %s; kernels %s; F16 KV, 32 heads, 4 KV heads, head_dim 64\n",
              swiftlet::CpuFeatureSummary().c_str(),
              swiftlet::KernelIsaName(swiftlet::ChosenKernelIsa()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
