// Workbench for the per-row kernels that have an ISA twin each: the
// activation quantizers (Q8_0, Q8_K), the SiLU gate, the attention group
// ops (one F16 key or value row against the 8 query heads of a TinyLlama
// GQA group) and a greedy row's argmax, for every variant this CPU runs.
// Each variant is first checked against its scalar twin (bit for bit; the
// argmax, the same index) on the same inputs; one that differs is
// reported as an error, not timed.
//
//   build/bench/row_ops_bench [--benchmark_filter=silu]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/argmax.h"
#include "kernels/activation_quantize.h"
#include "kernels/argmax_row.h"
#include "kernels/attention_ops.h"
#include "kernels/cpu_features.h"
#include "kernels/float16.h"
#include "kernels/silu.h"

namespace swiftlet {
namespace {

constexpr int64_t kRow = 5632;  // TinyLlama's FFN width (a multiple of 256).
constexpr int64_t kHeadDim = 64, kGroup = 8, kKeys = 512;

std::vector<float> Normal(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

template <typename Block>
void BM_Quantize(benchmark::State& state, KernelIsa isa) {
  const std::vector<float> x = Normal(kRow, 1);
  const ActivationQuantizers& q = ActivationQuantizersFor(isa);
  const ActivationQuantizers& scalar = ActivationQuantizersFor(KernelIsa::kScalar);
  auto fn = [&](const ActivationQuantizers& a) {
    if constexpr (std::is_same_v<Block, BlockQ8_0>) return a.q8_0;
    else return a.q8_k;
  };
  std::vector<Block> got(kRow / Block::kElems), want(got.size());
  fn(q)(x.data(), got.data(), kRow);
  fn(scalar)(x.data(), want.data(), kRow);
  if (std::memcmp(got.data(), want.data(), got.size() * sizeof(Block)) != 0) {
    state.SkipWithError("differs from the scalar quantizer");
    return;
  }
  for (auto _ : state) {
    fn(q)(x.data(), got.data(), kRow);
    benchmark::DoNotOptimize(got.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kRow * 4);
}

void BM_Silu(benchmark::State& state, KernelIsa isa) {
  const std::vector<float> gate = Normal(kRow, 2), up = Normal(kRow, 3);
  std::vector<float> got = gate, want = gate;
  SiluMulFor(isa)(got.data(), up.data(), kRow);
  SiluMulScalar(want.data(), up.data(), kRow);
  if (std::memcmp(got.data(), want.data(), got.size() * 4) != 0) {
    state.SkipWithError("differs from the scalar SiLU gate");
    return;
  }
  const SiluMulFn fn = SiluMulFor(isa);
  std::vector<float> work(gate.size());
  for (auto _ : state) {
    // Fresh gate values each pass (the op works in place); the copy is
    // a small part of the time and the same for every variant.
    std::memcpy(work.data(), gate.data(), gate.size() * 4);
    fn(work.data(), up.data(), kRow);
    benchmark::DoNotOptimize(work.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kRow);
}

// Scores of one GQA group against kKeys F16 keys, then the weighted sum of
// as many values: attention's two inner loops for one decode row.
void BM_AttentionGroup(benchmark::State& state, KernelIsa isa) {
  const std::vector<float> q = Normal(kGroup * kHeadDim, 4), kf = Normal(kKeys * kHeadDim, 5);
  std::vector<uint16_t> kv(kf.size());
  for (size_t i = 0; i < kf.size(); ++i) kv[i] = Fp32ToFp16(kf[i]);
  const AttentionOps& ops = AttentionOpsFor(isa, kHeadDim);
  const AttentionOps& scalar = AttentionOpsScalar();
  std::vector<float> got(kGroup), want(kGroup);
  std::vector<float> acc(kGroup * kHeadDim, 0.0f), acc_want(acc.size(), 0.0f);
  // The value rows in blocks of 32 keys, as attention takes them.
  constexpr int64_t kBlock = 32;
  std::vector<const uint16_t*> rows(kKeys);
  for (int64_t j = 0; j < kKeys; ++j) rows[j] = kv.data() + j * kHeadDim;
  const std::vector<float> p(kBlock * kGroup, 0.01f);
  for (int64_t j = 0; j < kKeys; ++j) {
    ops.dot_group_f16(q.data(), kGroup, kv.data() + j * kHeadDim, kHeadDim, got.data());
    scalar.dot_group_f16(q.data(), kGroup, kv.data() + j * kHeadDim, kHeadDim, want.data());
    if (std::memcmp(got.data(), want.data(), kGroup * 4) != 0) {
      state.SkipWithError("scores differ from the scalar ops");
      return;
    }
  }
  for (int64_t j0 = 0; j0 < kKeys; j0 += kBlock) {
    ops.axpy_rows_f16(acc.data(), kGroup, p.data(), rows.data() + j0, kBlock, kHeadDim);
    scalar.axpy_rows_f16(acc_want.data(), kGroup, p.data(), rows.data() + j0, kBlock, kHeadDim);
  }
  if (std::memcmp(acc.data(), acc_want.data(), acc.size() * 4) != 0) {
    state.SkipWithError("weighted values differ from the scalar ops");
    return;
  }
  std::vector<float> scores(kKeys * kGroup);
  for (auto _ : state) {
    for (int64_t j = 0; j < kKeys; ++j) {
      ops.dot_group_f16(q.data(), kGroup, kv.data() + j * kHeadDim, kHeadDim, scores.data() + j * kGroup);
    }
    for (int64_t j0 = 0; j0 < kKeys; j0 += kBlock) {
      ops.axpy_rows_f16(acc.data(), kGroup, scores.data() + j0 * kGroup, rows.data() + j0, kBlock, kHeadDim);
    }
    benchmark::DoNotOptimize(acc.data());
  }
  // A multiply and an add per element, head and key, in each of the two loops.
  state.counters["GFLOPS"] = benchmark::Counter(
      4.0 * kKeys * kGroup * kHeadDim * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate,
      benchmark::Counter::kIs1000);
}

// A greedy row's argmax over Llama's 32 k and Qwen's 152 k ids (logits
// N(0, 2): one largest, anywhere; the row stays in cache between passes).
void BM_ArgMax(benchmark::State& state, KernelIsa isa) {
  const int64_t n = state.range(0);
  std::vector<float> x = Normal(n, 6);
  for (float& v : x) v *= 2;
  const ArgMaxRowFn fn = ArgMaxRowFor(isa);
  if (fn(x.data(), n) != ArgMaxRow(x.data(), n)) {
    state.SkipWithError("differs from the scan");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(fn(x.data(), n));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * n * 4);
}

void Register() {
  for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (!CpuSupports(isa)) continue;
    const std::string name = KernelIsaName(isa);
    benchmark::RegisterBenchmark(("quantize_q8_0/" + name).c_str(), BM_Quantize<BlockQ8_0>, isa);
    benchmark::RegisterBenchmark(("quantize_q8_k/" + name).c_str(), BM_Quantize<BlockQ8_K>, isa);
    benchmark::RegisterBenchmark(("silu_mul/" + name).c_str(), BM_Silu, isa);
    benchmark::RegisterBenchmark(("attention_group_f16/" + name).c_str(), BM_AttentionGroup, isa);
    benchmark::RegisterBenchmark(("argmax/" + name).c_str(), BM_ArgMax, isa)->Arg(32000)->Arg(151936);
  }
}

}  // namespace
}  // namespace swiftlet

int main(int argc, char** argv) {
  std::printf("cpu: %s; variants run: scalar and, where present, avx2 and avx512\n",
              swiftlet::CpuFeatureSummary().c_str());
  swiftlet::Register();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
