// Kernel workbench: GEMV (one activation row, the decode case) and a
// small-batch matmul for each weight type and each ISA variant this CPU
// runs. Every variant is first checked bit-exact against the scalar
// specification, then timed. Reports weight bytes streamed per second, the
// figure that bounds decode speed.
//
//   build/bench/matmul_bench [--benchmark_filter=Q4_K]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/backend.h"
#include "core/thread_pool.h"
#include "kernels/cpu_features.h"
#include "perf/machine_limits.h"
#include "perf/machine_limits_variants.h"
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
  if (!CpuSupports(isa)) {
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

// Version 2 at memory scale: one GEMV (the decode case) over a weight of
// TinyLlama's width (n_in 2048) tall enough to be ReadBufferBytes() (8x the
// last-level cache), on `threads` threads through the backend, as a decode
// step runs it. The same bytes are first read by the bandwidth benchmark's
// kernel on the same number of threads, so the share of raw read bandwidth
// the kernel reaches is printed beside it (read_share).
void BM_PackedGemvFromMemory(benchmark::State& state, TensorType type, int threads) {
  constexpr int64_t kWideIn = 2048, kTileRows = 1024;
  uint64_t row_bytes = 0;
  (void)RowBytes(type, kWideIn, &row_bytes);
  const int64_t n_out =
      static_cast<int64_t>(ReadBufferBytes(LastLevelCacheBytes()) / row_bytes) / kTileRows * kTileRows;
  // One quantized tile of rows, repeated: the values do not matter here,
  // only that every byte comes from memory.
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> f(kWideIn);
  std::vector<uint8_t> tile(row_bytes * kTileRows);
  for (int64_t o = 0; o < kTileRows; ++o) {
    for (float& v : f) v = d(rng);
    QuantizeRow(type, f.data(), tile.data() + o * row_bytes, kWideIn);
  }
  std::vector<uint8_t> file(row_bytes * static_cast<size_t>(n_out));
  for (int64_t o = 0; o < n_out; o += kTileRows) {
    std::memcpy(file.data() + o * row_bytes, tile.data(), tile.size());
  }
  const WeightView view{type, kWideIn, n_out, file.data(), row_bytes};
  std::unique_ptr<PackedWeight> packed = PackWeight(view, ChosenKernelIsa(), threads);
  if (packed == nullptr) {
    state.SkipWithError("no packed kernel for this type on this CPU");
    return;
  }
  file = {};
  std::vector<float> x(kWideIn);
  for (float& v : x) v = d(rng);
  std::vector<float> y(static_cast<size_t>(n_out));
  auto backend = MakeCpuBackend(threads);
  // Checked against the specification on the first tile's rows.
  backend->MatMul(packed->view(), x.data(), 1, y.data());
  const TensorType at = ActivationTypeFor(type);
  uint64_t arow = 0;
  (void)RowBytes(at, kWideIn, &arow);
  std::vector<uint8_t> act(arow);
  QuantizeRow(at, x.data(), act.data(), kWideIn);
  for (int64_t o = 0; o < n_out; o += 97) {
    const float want = VecDotScalar(type, tile.data() + (o % kTileRows) * row_bytes, act.data(), kWideIn);
    if (std::memcmp(&want, &y[static_cast<size_t>(o)], 4) != 0) {
      state.SkipWithError("packed kernel differs from the scalar specification");
      return;
    }
  }
  // Raw read bandwidth over the same bytes, same thread count, in 4 MiB
  // chunks as the machine-limits benchmark reads.
  const uint8_t* bytes = packed->view().data;
  const size_t readable = packed->bytes() / (4 << 20) * (4 << 20);
  ComputePool pool(threads);
  std::vector<double> read_gbs;
  for (int pass = 0; pass < 5; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.Run(static_cast<int64_t>(readable >> 22), [&](int64_t i) {
      benchmark::DoNotOptimize(machine_limits::ReadSumAvx512(bytes + (i << 22), size_t{4} << 20));
    });
    read_gbs.push_back(static_cast<double>(readable) /
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1e9);
  }
  std::sort(read_gbs.begin(), read_gbs.end());
  for (auto _ : state) {
    backend->MatMul(packed->view(), x.data(), 1, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(packed->bytes()));
  state.counters["read_GBs"] = read_gbs[2];
  state.counters["gemv_GBs"] = benchmark::Counter(
      static_cast<double>(packed->bytes()) * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}

void Register() {
  // The packed kernels run through the backend, so on ChosenKernelIsa():
  // SWIFTLET_ISA=avx2 (or avxvnni) times those variants.
  const std::string packed = std::string("/v2-packed16-") + KernelIsaName(ChosenKernelIsa());
  if (ChosenKernelIsa() != KernelIsa::kScalar) {
    for (TensorType t : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ5_K,
                       TensorType::kQ6_K}) {
      for (int threads : {1, 2}) {
        const std::string name = std::string(NameOf(t)) + packed + "/gemv-from-memory/threads:" +
                                 std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), BM_PackedGemvFromMemory, t, threads)
            ->Unit(benchmark::kMillisecond)
            ->MinTime(1.0)
            ->UseRealTime();
      }
    }
  }
  for (TensorType t : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ5_K,
                       TensorType::kQ6_K, TensorType::kF32, TensorType::kF16, TensorType::kBF16}) {
    for (int rows : {1, 8, 64}) {
      const std::string name = std::string(NameOf(t)) + packed + "/rows:" + std::to_string(rows);
      benchmark::RegisterBenchmark(name.c_str(), BM_PackedMatMul, t, rows)
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.3);
    }
  }
  for (TensorType t : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ5_K,
                       TensorType::kQ6_K}) {
    for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvxVnni, KernelIsa::kAvx512Vnni}) {
      for (int rows : {1, 8}) {
        const std::string name = std::string(NameOf(t)) + "/" + KernelIsaName(isa) +
                                 "/rows:" + std::to_string(rows);
        benchmark::RegisterBenchmark(name.c_str(), BM_MatMul, t, isa, rows)
            ->Unit(benchmark::kMillisecond)
            ->MinTime(0.3);
      }
    }
  }
  // The float types' one-row kernels are scalar only: a row's sum is one
  // sequential chain (the specification), which only the packed layout,
  // 16 rows to a vector, runs in SIMD.
  for (TensorType t : {TensorType::kF32, TensorType::kF16, TensorType::kBF16}) {
    const std::string name = std::string(NameOf(t)) + "/scalar/rows:1";
    benchmark::RegisterBenchmark(name.c_str(), BM_MatMul, t, KernelIsa::kScalar, 1)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.3);
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
