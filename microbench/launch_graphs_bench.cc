// The host's cost of a GPU decode step's launches, without a GPU: the CUDA
// backend records every launch of a step (kernels/cuda/launch_graphs.h),
// then finds the graph of the same shapes and compares every launch's
// arguments before replaying it. The GPU waits through all of it (the next
// step is recorded only once the last one's tokens are back), so it is
// part of every decode step's time. This times the recording and the
// graph's lookup for a step shaped like a 7B's (32 layers of 18 launches,
// 9 arguments each, nothing changed since the last step), with the
// queue's lock per launch as CudaQueue::Launch takes it; the executor does
// nothing, so the CUDA runtime's own cost (one cudaGraphLaunch) is not
// here.
//
//   build/microbench/launch_graphs_bench
//
// Figures: docs/PERFORMANCE.md, "The host's recording of a GPU step".
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <mutex>

#include "kernels/cuda/launch_graphs.h"

namespace swiftlet::cuda_graphs {
namespace {

struct NoOpExecutor {
  struct Graph {};
  void RunEager(LaunchList&) {}
  Graph Build(LaunchList&) { return {}; }
  void Update(Graph&, LaunchList&, size_t) {}
  void Launch(Graph&) {}
};

// A decode step's launches: per layer the norm, the quantizer, the QKV,
// RoPE, the KV store, attention, the output projection, the residual add,
// the second norm and quantizer, gate and up, SiLU x mul, the quantizer and
// the down projection, the add (18), then the final norm, the head and the
// argmax.
constexpr int kLayers = 32;
constexpr int kPerLayer = 18;
constexpr int kTail = 4;
std::array<char, kPerLayer + kTail> kernels;  // Their addresses stand for kernels.

template <typename T>
void Arg(LaunchList& list, T value) {
  list.AddArg(&value, sizeof(T), alignof(T));
}

void RecordStep(LaunchList& list, std::mutex& mu, const std::array<uint64_t, 4>& buffers) {
  auto launch = [&](int k, uint32_t grid, int layer) {
    std::lock_guard<std::mutex> lock(mu);
    list.Begin({&kernels[static_cast<size_t>(k)], {grid, 1, 1}, {256, 1, 1}, 0}, "kernel");
    // Pointers, sizes and a float, as the matmul and attention kernels take.
    Arg(list, reinterpret_cast<const void*>(buffers[0] + static_cast<uint64_t>(layer) * 4096));
    Arg(list, size_t{2304});
    Arg(list, int64_t{4096});
    Arg(list, int64_t{4096});
    Arg(list, reinterpret_cast<const void*>(buffers[1]));
    Arg(list, reinterpret_cast<const void*>(buffers[2]));
    Arg(list, reinterpret_cast<const void*>(buffers[3]));
    Arg(list, int64_t{1});
    Arg(list, 1e-5f);
  };
  for (int l = 0; l < kLayers; ++l) {
    for (int k = 0; k < kPerLayer; ++k) launch(k, 128 + static_cast<uint32_t>(k), l);
  }
  for (int k = 0; k < kTail; ++k) launch(kPerLayer + k, 64, kLayers);
}

void BM_DecodeStepLaunches(benchmark::State& state) {
  NoOpExecutor executor;
  LaunchGraphs<NoOpExecutor> graphs(executor, {});
  LaunchList list;
  std::mutex mu;
  const std::array<uint64_t, 4> buffers = {0x7f0000000000, 0x7f1000000000, 0x7f2000000000, 0x7f3000000000};
  for (int warm = 0; warm < 3; ++warm) {  // Seen, built, then replayed.
    list.Clear();
    RecordStep(list, mu, buffers);
    graphs.Run(list);
  }
  for (auto _ : state) {
    list.Clear();
    RecordStep(list, mu, buffers);
    graphs.Run(list);
    benchmark::DoNotOptimize(list);
  }
  const double launches = kLayers * kPerLayer + kTail;
  state.counters["launches"] = launches;
  state.counters["ns_per_launch"] =
      benchmark::Counter(launches * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  if (graphs.stats().replayed < static_cast<uint64_t>(state.iterations())) state.SkipWithError("not replayed");
  if (graphs.stats().updated_nodes != 0) state.SkipWithError("a steady step changed arguments");
}
BENCHMARK(BM_DecodeStepLaunches)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace swiftlet::cuda_graphs

BENCHMARK_MAIN();
