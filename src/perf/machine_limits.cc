#include "perf/machine_limits.h"

#include <cpuid.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/huge_page_buffer.h"
#include "core/str_cat.h"
#include "kernels/cpu_features.h"
#include "perf/machine_limits_variants.h"
#include "perf/median.h"

namespace swiftlet {
namespace machine_limits {
namespace {

constexpr int kScalarChains = 8;

double Int8ScalarRun(int64_t iters, uint32_t seed) {
  // Unsigned accumulators: wrapping is defined, and the values do not matter.
  uint32_t acc[kScalarChains] = {};
  int32_t b[kScalarChains];
  for (int j = 0; j < kScalarChains; ++j) b[j] = static_cast<int8_t>((seed >> j) % 7 + 1);
  int32_t a = static_cast<int32_t>(seed % 63) + 1;
  for (int64_t i = 0; i < iters; ++i) {
    __asm__ volatile("" : "+r"(a));  // Opaque: no hoisting, no closed form.
    for (int j = 0; j < kScalarChains; ++j) acc[j] += static_cast<uint32_t>(a * b[j]);
  }
  double s = 0;
  for (uint32_t v : acc) s += v;
  return s;
}

double Fp32ScalarRun(int64_t iters, uint32_t seed) {
  // acc = acc * x + y stays near 1 (no overflow, no denormals); the kernels
  // library builds with -ffp-contract=off, so this is a multiply and an add.
  float acc[kScalarChains];
  for (int j = 0; j < kScalarChains; ++j) acc[j] = 1.0f + static_cast<float>((seed + j) % 5);
  const float x = 0.999f, y = 0.001f;
  for (int64_t i = 0; i < iters; ++i) {
    for (int j = 0; j < kScalarChains; ++j) acc[j] = acc[j] * x + y;
  }
  double s = 0;
  for (float v : acc) s += v;
  return s;
}

}  // namespace

PeakKernel Int8PeakScalar() { return {"scalar", kScalarChains * 2.0, Int8ScalarRun}; }
PeakKernel Fp32PeakScalar() { return {"scalar", kScalarChains * 2.0, Fp32ScalarRun}; }

uint64_t ReadSumScalar(const uint8_t* data, size_t n) {
  uint64_t acc[4] = {};
  for (size_t off = 0; off < n; off += 32) {
    for (int j = 0; j < 4; ++j) {
      uint64_t v;
      std::memcpy(&v, data + off + 8 * j, 8);
      acc[j] += v;
    }
  }
  return acc[0] + acc[1] + acc[2] + acc[3];
}

}  // namespace machine_limits

namespace {

using machine_limits::PeakKernel;
using machine_limits::ReadSumFn;
using SteadyClock = std::chrono::steady_clock;

constexpr uint64_t kMiB = uint64_t{1} << 20;
// The buffer is read in chunks of this size, claimed one by one by the
// pool's threads (each chunk is read by exactly one of them).
constexpr uint64_t kReadChunk = 4 * kMiB;
constexpr uint64_t kQuickReadBytes = 16 * kMiB;

// Keeps the kernels' results alive so their work is never optimised away.
volatile double g_sink = 0;

double Seconds(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }

struct ReadKernel {
  const char* name;
  ReadSumFn fn;
};

// Candidates of each kind; the best one is reported. Wider is not always
// faster for reads: on this project's Zen 4 machine the 256-bit loop streams
// ~15% more than the 512-bit one at times, and four streams per thread more
// than one (the matmuls read several at once, and a limit they beat is no
// limit).
struct IsaKernels {
  std::vector<PeakKernel> int8;
  std::vector<PeakKernel> fp32;
  std::vector<ReadKernel> read;
};

IsaKernels KernelsFor(KernelIsa isa) {
  namespace ml = machine_limits;
  const std::vector<ReadKernel> kAvx512Reads = {{"avx512", ml::ReadSumAvx512},
                                                {"avx2", ml::ReadSumAvx2},
                                                {"avx512x4", ml::ReadSum4StreamsAvx512},
                                                {"avx2x4", ml::ReadSum4StreamsAvx2}};
  switch (isa) {
    case KernelIsa::kAvx512Vnni:
      return {{ml::Int8PeakVnni512(), ml::Int8PeakVnni256()},
              {ml::Fp32PeakAvx512(), ml::Fp32PeakAvx2()},
              kAvx512Reads};
    case KernelIsa::kAvx512:
      return {{ml::Int8PeakAvx512Bw(), ml::Int8PeakAvx2()},
              {ml::Fp32PeakAvx512(), ml::Fp32PeakAvx2()},
              kAvx512Reads};
    case KernelIsa::kAvxVnni:
      return {{ml::Int8PeakAvxVnni(), ml::Int8PeakAvx2()}, {ml::Fp32PeakAvx2()},
              {{"avx2", ml::ReadSumAvx2}, {"avx2x4", ml::ReadSum4StreamsAvx2}}};
    case KernelIsa::kAvx2:
      return {{ml::Int8PeakAvx2()}, {ml::Fp32PeakAvx2()},
              {{"avx2", ml::ReadSumAvx2}, {"avx2x4", ml::ReadSum4StreamsAvx2}}};
    case KernelIsa::kScalar:
      break;
  }
  return {{ml::Int8PeakScalar()}, {ml::Fp32PeakScalar()}, {{"scalar", ml::ReadSumScalar}}};
}

// Operations per second of `k` on all of the pool's threads: calibrated to
// about `target_s` of wall time per run, best of `runs`. More tasks than
// threads, so a thread that starts late does not leave the others waiting
// for a second share.
double MeasurePeak(ComputePool& pool, const PeakKernel& k, double target_s, int runs) {
  const int64_t tasks = int64_t{pool.threads()} * 4;
  std::vector<double> sinks(static_cast<size_t>(tasks));
  auto run_once = [&](int64_t iters) {
    const auto t0 = SteadyClock::now();
    pool.Run(tasks, [&](int64_t i) {
      sinks[static_cast<size_t>(i)] = k.run(iters, 0x9e3779b9u * static_cast<uint32_t>(i + 1));
    });
    const double s = Seconds(SteadyClock::now() - t0);
    double sum = 0;
    for (double v : sinks) sum += v;
    g_sink = g_sink + sum;
    return s;
  };
  int64_t iters = 256;
  double t = run_once(iters);
  while (t < target_s / 8 && iters < (int64_t{1} << 40)) {
    iters *= 4;
    t = run_once(iters);
  }
  iters = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iters) * target_s / t));
  double best = 0;
  for (int r = 0; r < runs; ++r) {
    t = run_once(iters);
    const double ops = static_cast<double>(tasks) * static_cast<double>(iters) * k.ops_per_iter;
    best = std::max(best, ops / t);
  }
  return best;
}

// Median GB/s over `passes` passes of each read kernel over one buffer of
// `bytes`; the best kernel's median is kept in `m`.
absl::Status MeasureReadBandwidth(ComputePool& pool, uint64_t bytes, int passes,
                                  const std::vector<ReadKernel>& kernels, MachineLimits& m) {
  // On 2 MiB pages, as the repacked weights the decode matmuls stream.
  absl::StatusOr<HugePageBuffer> buffer = HugePageBuffer::Allocate(bytes);
  if (!buffer.ok()) {
    return absl::ResourceExhaustedError(StrCat("the read bandwidth benchmark's ", bytes / kMiB,
                                               " MiB: ", buffer.status().message()));
  }
  uint8_t* base = buffer->data();
  const int64_t chunks = static_cast<int64_t>(bytes / kReadChunk);
  // Every page is written first: untouched pages all map the kernel's zero
  // page and would be read from cache. Writing in parallel places each page
  // near a thread that reads it.
  pool.Run(chunks, [&](int64_t i) {
    std::memset(base + i * kReadChunk, static_cast<int>(1 + i % 251), kReadChunk);
  });
  std::vector<uint64_t> sums(static_cast<size_t>(chunks));
  for (const ReadKernel& k : kernels) {
    std::vector<double> gbs;
    for (int p = 0; p < passes; ++p) {
      const auto t0 = SteadyClock::now();
      pool.Run(chunks, [&](int64_t i) {
        sums[static_cast<size_t>(i)] = k.fn(base + i * kReadChunk, kReadChunk);
      });
      const double s = Seconds(SteadyClock::now() - t0);
      uint64_t total = 0;
      for (uint64_t v : sums) total += v;
      g_sink = g_sink + static_cast<double>(total);
      gbs.push_back(static_cast<double>(bytes) / s / 1e9);
    }
    const double median = Median(gbs);
    if (median > m.read_bandwidth_gbs) {
      m.read_bandwidth_gbs = median;
      m.read_kernel = k.name;
    }
  }
  ++m.read_measurements;
  return absl::OkStatus();
}

// Parses a sysfs cache size ("32768K", "1M", "512").
uint64_t ParseCacheSize(const std::string& text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return 0;
  if (*end == 'K') return v << 10;
  if (*end == 'M') return v << 20;
  if (*end == 'G') return v << 30;
  return v;
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

uint64_t LastLevelCacheBytes() {
  // sysfs first: it describes the cache cpu0 actually shares. glibc's
  // sysconf derives L3 from CPUID and on some AMD parts reports the whole
  // package's L3 (ten times the per-CCD figure on this project's machine).
  int best_level = 0;
  uint64_t best = 0;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = StrCat("/sys/devices/system/cpu/cpu0/cache/index", i, "/");
    std::ifstream level_in(dir + "level"), size_in(dir + "size"), type_in(dir + "type");
    int level = 0;
    std::string size, type;
    if (!(level_in >> level) || !(size_in >> size)) continue;
    type_in >> type;
    if (type == "Instruction") continue;
    if (level > best_level) {
      best_level = level;
      best = ParseCacheSize(size);
    }
  }
  if (best > 0) return best;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return l3 > 0 ? static_cast<uint64_t>(l3) : 0;
}

uint64_t ReadBufferBytes(uint64_t llc_bytes) {
  const uint64_t llc = llc_bytes > 0 ? llc_bytes : 32 * kMiB;
  const uint64_t eight_llc = llc >= 128 * kMiB ? 1024 * kMiB : 8 * llc;  // No overflow.
  const uint64_t bytes = std::clamp<uint64_t>(eight_llc, 256 * kMiB, 1024 * kMiB);
  return bytes / kReadChunk * kReadChunk;
}

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = Trim(line.substr(colon + 1));
    if (!name.empty()) return name;
  }
  unsigned max_leaf = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &max_leaf, &b, &c, &d) && max_leaf >= 0x80000004u) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      unsigned r[4];
      __get_cpuid(0x80000002u + leaf, &r[0], &r[1], &r[2], &r[3]);
      std::memcpy(brand + 16 * leaf, r, 16);
    }
    std::string name = Trim(brand);
    if (!name.empty()) return name;
  }
  return "unknown x86-64";
}

absl::Status RemeasureReadBandwidth(ComputePool& pool, const MachineLimitsOptions& options,
                                    MachineLimits& m) {
  return MeasureReadBandwidth(pool, m.read_buffer_bytes, options.quick ? 3 : 7,
                              KernelsFor(ChosenKernelIsa()).read, m);
}

absl::StatusOr<MachineLimits> MeasureMachineLimits(ComputePool& pool,
                                                   const MachineLimitsOptions& options) {
  const IsaKernels kernels = KernelsFor(ChosenKernelIsa());
  MachineLimits m;
  m.threads = pool.threads();
  m.llc_bytes = LastLevelCacheBytes();
  m.read_buffer_bytes = options.quick ? kQuickReadBytes : ReadBufferBytes(m.llc_bytes);
  SWIFTLET_RETURN_IF_ERROR(RemeasureReadBandwidth(pool, options, m));
  // ~50 ms per run, 3 runs per kernel: about a second for all of them.
  const double target_s = options.quick ? 0.002 : 0.05;
  const int runs = options.quick ? 1 : 3;
  for (const PeakKernel& k : kernels.int8) {
    const double gops = MeasurePeak(pool, k, target_s, runs) / 1e9;
    if (gops > m.int8_peak_gops) {
      m.int8_peak_gops = gops;
      m.int8_kernel = k.name;
    }
  }
  for (const PeakKernel& k : kernels.fp32) {
    const double gflops = MeasurePeak(pool, k, target_s, runs) / 1e9;
    if (gflops > m.fp32_peak_gflops) {
      m.fp32_peak_gflops = gflops;
      m.fp32_kernel = k.name;
    }
  }
  return m;
}

}  // namespace swiftlet
