// Kernel workbench: GEMV (one activation row, the decode case) and a
// small-batch matmul for each weight type and each ISA variant this CPU
// runs. Every variant is first checked bit-exact against the scalar
// specification, then timed. Reports weight bytes streamed per second, the
// figure that bounds decode speed.
//
//   build/bench/matmul_bench [--benchmark_filter=Q4_K]
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu_features.h"
#include "kernels/packed_weights.h"
#include "kernels/quantize.h"
#include "kernels/vec_dot.h"

namespace swiftlet {
namespace {

constexpr int64_t kIn = 4096;
constexpr int64_t kOut = 4096;  // 16 M weights: far larger than the L3 cache in Q8_0.

struct Weights {
  std::vector<uint8_t> bytes;
  size_t row_bytes = 0;
};

const Weights& WeightsOf(TensorType type) {
  static std::vector<Weights> cache(32);
  Weights& w = cache[static_cast<size_t>(type)];
  if (!w.bytes.empty()) return w;
  uint64_t row = 0;
  (void)RowBytes(type, kIn, &row);
  w.row_bytes = row;
  w.bytes.resize(row * kOut);
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> f(kIn);
  for (int64_t o = 0; o < kOut; ++o) {
    for (float& x : f) x = d(rng);
    QuantizeRow(type, f.data(), w.bytes.data() + o * row, kIn);
  }
  return w;
}

void BM_MatMul(benchmark::State& state, TensorType type, KernelIsa isa, int rows) {
  const CpuFeatures& f = DetectCpuFeatures();
  const bool ok = isa == KernelIsa::kScalar || (isa == KernelIsa::kAvx2 && f.avx2) ||
                  (isa == KernelIsa::kAvx512Vnni && f.avx512_vnni);
  if (!ok) {
    state.SkipWithError("ISA not on this CPU");
    return;
  }
  const Weights& w = WeightsOf(type);
  const TensorType at = ActivationTypeFor(type);
  uint64_t arow = 0;
  (void)RowBytes(at, kIn, &arow);
  std::vector<float> x(kIn * rows);
  std::mt19937 rng(2);
  std::normal_distribution<float> d(0, 1);
  for (float& v : x) v = d(rng);
  std::vector<uint8_t> act(arow * rows);
  for (int r = 0; r < rows; ++r) QuantizeRow(at, x.data() + r * kIn, act.data() + r * arow, kIn);
  const VecDotFnPtr fn = VecDotFor(isa, type);
  // Checked against the specification before timing.
  for (int64_t o = 0; o < kOut; o += 97) {
    const float want = VecDotScalar(type, w.bytes.data() + o * w.row_bytes, act.data(), kIn);
    const float got = fn(w.bytes.data() + o * w.row_bytes, act.data(), kIn);
    if (std::memcmp(&want, &got, 4) != 0) {
      state.SkipWithError("variant differs from the scalar specification");
      return;
    }
  }
  std::vector<float> y(kOut * rows);
  for (auto _ : state) {
    for (int64_t o = 0; o < kOut; ++o) {
      for (int r = 0; r < rows; ++r) {
        y[r * kOut + o] = fn(w.bytes.data() + o * w.row_bytes, act.data() + r * arow, kIn);
      }
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(w.bytes.size()));
  state.counters["GOPS"] = benchmark::Counter(
      2.0 * kIn * kOut * rows * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate,
      benchmark::Counter::kIs1000);
}

// Version 2: weights repacked 16 rows at a time (kernels/packed_weights.h),
// the whole backend MatMul timed (activation quantization included), one
// thread.
void BM_PackedMatMul(benchmark::State& state, TensorType type, int rows) {
  const Weights& w = WeightsOf(type);
  const WeightView view{type, kIn, kOut, w.bytes.data(), w.row_bytes};
  std::unique_ptr<PackedWeight> packed = PackWeight(view, ChosenKernelIsa(), 2);
  if (packed == nullptr) {
    state.SkipWithError("no packed kernel for this type on this CPU");
    return;
  }
  std::vector<float> x(kIn * rows);
  std::mt19937 rng(2);
  std::normal_distribution<float> d(0, 1);
  for (float& v : x) v = d(rng);
  const TensorType at = ActivationTypeFor(type);
  uint64_t arow = 0;
  (void)RowBytes(at, kIn, &arow);
  std::vector<uint8_t> act(arow * rows);
  for (int r = 0; r < rows; ++r) QuantizeRow(at, x.data() + r * kIn, act.data() + r * arow, kIn);
  auto backend = MakeCpuBackend(1);
  std::vector<float> y(kOut * rows);
  backend->MatMul(packed->view(), x.data(), rows, y.data());
  for (int r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < kOut; o += 97) {
      const float want =
          VecDotScalar(type, w.bytes.data() + o * w.row_bytes, act.data() + r * arow, kIn);
      if (std::memcmp(&want, &y[r * kOut + o], 4) != 0) {
        state.SkipWithError("packed kernel differs from the scalar specification");
        return;
      }
    }
  }
  for (auto _ : state) {
    backend->MatMul(packed->view(), x.data(), rows, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(packed->bytes()));
  state.counters["GOPS"] = benchmark::Counter(
      2.0 * kIn * kOut * rows * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate,
      benchmark::Counter::kIs1000);
}

void Register() {
  for (TensorType t : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ6_K}) {
    for (int rows : {1, 8, 64}) {
      const std::string name = std::string(NameOf(t)) + "/v2-packed16/rows:" + std::to_string(rows);
      benchmark::RegisterBenchmark(name.c_str(), BM_PackedMatMul, t, rows)
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.3);
    }
  }
  for (TensorType t : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ5_K,
                       TensorType::kQ6_K}) {
    for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvx512Vnni}) {
      for (int rows : {1, 8}) {
        const std::string name = std::string(NameOf(t)) + "/" + KernelIsaName(isa) +
                                 "/rows:" + std::to_string(rows);
        benchmark::RegisterBenchmark(name.c_str(), BM_MatMul, t, isa, rows)
            ->Unit(benchmark::kMillisecond)
            ->MinTime(0.3);
      }
    }
  }
}

}  // namespace
}  // namespace swiftlet

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  swiftlet::Register();
  std::printf("cpu features: %s; single thread; weights %lldx%lld\n",
              swiftlet::CpuFeatureSummary().c_str(), static_cast<long long>(swiftlet::kIn),
              static_cast<long long>(swiftlet::kOut));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
