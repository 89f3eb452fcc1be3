// What this machine can do at best, measured by short microbenchmarks: the
// read bandwidth from memory and the int8 and fp32 compute peaks. The engine
// benchmark (engine/engine_bench.h) states its results as a share of these
// limits. The compute kernels use the best ISA ChosenKernelIsa() allows (so
// SWIFTLET_ISA caps them as it caps the model's kernels); each runs on every
// thread of the pool at once.
//
// Not for the serving path: a measurement takes about a second and saturates
// every core and the memory bus while it runs.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "core/thread_pool.h"

namespace swiftlet {

struct MachineLimitsOptions {
  // A few milliseconds instead of about a second, over a buffer that may fit
  // in cache: for tests of the plumbing, not for figures.
  bool quick = false;
};

struct MachineLimits {
  int threads = 0;
  uint64_t llc_bytes = 0;          // Last-level cache size the buffer was sized from.
  uint64_t read_buffer_bytes = 0;  // Bytes read per bandwidth pass.
  // Median over the passes of bytes / wall time, all threads reading
  // disjoint parts of the buffer at once (1 GB = 1e9 bytes); the better
  // read kernel's where the ISA has two (256- and 512-bit loads).
  // The best median of every measurement made (RemeasureReadBandwidth adds
  // more): memory bandwidth on a shared machine drifts with its neighbours'
  // load, and a limit taken at a quiet moment is still a limit.
  double read_bandwidth_gbs = 0;
  int read_measurements = 0;
  // Best of a few runs (a peak is what the machine reaches at best). A
  // multiply-add counts as 2 operations.
  double int8_peak_gops = 0;
  double fp32_peak_gflops = 0;
  std::string int8_kernel;  // Which kernel reached the peak, e.g. "avx512vnni/ymm".
  std::string fp32_kernel;
  std::string read_kernel;
};

// Runs the microbenchmarks on `pool`'s threads. Fails only when the
// bandwidth buffer cannot be allocated.
absl::StatusOr<MachineLimits> MeasureMachineLimits(ComputePool& pool,
                                                   const MachineLimitsOptions& options = {});

// Measures the read bandwidth again on `pool` (as MeasureMachineLimits
// does) and keeps the higher figure in `m`. For benchmarks that run long
// enough for the machine's bandwidth to move: measured beside each test,
// the limit cannot sit below what the tests themselves stream.
absl::Status RemeasureReadBandwidth(ComputePool& pool, const MachineLimitsOptions& options,
                                    MachineLimits& m);

// The size of the largest cache cpu0 has (sysfs cpu0/cache/index*/size of
// the highest level, else sysconf(_SC_LEVEL3_CACHE_SIZE)); 0 when neither
// says.
uint64_t LastLevelCacheBytes();

// Bytes of the bandwidth buffer for a last-level cache of `llc_bytes`: at
// least 8x the cache (so passes stream from memory) and at least 256 MiB,
// at most 1 GiB; 32 MiB of cache is assumed when `llc_bytes` is 0.
uint64_t ReadBufferBytes(uint64_t llc_bytes);

// Bytes of physical memory (sysconf), 0 when unknown.
uint64_t PhysicalMemoryBytes();

// The CPU's name: /proc/cpuinfo's first "model name", else the CPUID brand
// string, else "unknown x86-64".
std::string CpuModelName();

}  // namespace swiftlet
