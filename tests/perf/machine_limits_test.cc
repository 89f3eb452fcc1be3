// The machine-limit microbenchmarks (kernels/machine_limits.h) as the engine
// benchmark uses them. They are kernels code; the tests sit here beside
// their one user until tests/kernels/ takes them.
#include "perf/machine_limits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu_features.h"
#include "perf/machine_limits_variants.h"

namespace swiftlet {
namespace {

namespace ml = machine_limits;
constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(MachineLimitsTest, BufferIsEightTimesTheCacheWithinBounds) {
  EXPECT_EQ(ReadBufferBytes(0), 256 * kMiB);  // Unknown: 32 MiB assumed.
  EXPECT_EQ(ReadBufferBytes(32 * kMiB), 256 * kMiB);
  EXPECT_EQ(ReadBufferBytes(1 * kMiB), 256 * kMiB);  // At least 256 MiB.
  EXPECT_EQ(ReadBufferBytes(96 * kMiB), 768 * kMiB);
  EXPECT_EQ(ReadBufferBytes(320 * kMiB), 1024 * kMiB);  // At most 1 GiB.
  EXPECT_EQ(ReadBufferBytes(UINT64_MAX / 2), 1024 * kMiB);
}

// Every read kernel sums the buffer's 64-bit words: compared with a plain
// sum, so a kernel that skips bytes (or is optimised away) fails.
TEST(MachineLimitsTest, ReadKernelsSumEveryWord) {
  const size_t n = 64 * ml::kReadGranule;
  auto* data = static_cast<uint8_t*>(std::aligned_alloc(64, n));
  std::mt19937_64 rng(3);
  uint64_t expected = 0;
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(data + i, &v, 8);
    expected += v;
  }
  EXPECT_EQ(ml::ReadSumScalar(data, n), expected);
  if (DetectCpuFeatures().avx2) {
    EXPECT_EQ(ml::ReadSumAvx2(data, n), expected);
    EXPECT_EQ(ml::ReadSum4StreamsAvx2(data, n), expected);
  }
  if (DetectCpuFeatures().avx512) {
    EXPECT_EQ(ml::ReadSumAvx512(data, n), expected);
    EXPECT_EQ(ml::ReadSum4StreamsAvx512(data, n), expected);
  }
  std::free(data);
}

// The u8 activation bytes and s8 weight bytes every int8 kernel uses, as
// machine_limits_*.cc derive them from the seed.
uint32_t ActivationByteSum(uint32_t seed) {
  const uint32_t a = (seed | 0x01010101u) & 0x3f3f3f3fu;
  return (a & 0xff) + ((a >> 8) & 0xff) + ((a >> 16) & 0xff) + (a >> 24);
}

// The int8 kernels' results count their work: `iters` iterations of
// ops_per_iter / 2 products each, every product a x b. A kernel whose loop
// the compiler shortened, or whose op count is wrong, fails.
TEST(MachineLimitsTest, Int8KernelsDoTheWorkTheyCount) {
  const uint32_t seed = 0x12345677u;
  const int64_t iters = 50;
  const double a4 = ActivationByteSum(seed);  // One 32-bit lane: 4 bytes.
  if (DetectCpuFeatures().avx512_vnni) {
    for (const ml::PeakKernel& k : {ml::Int8PeakVnni512(), ml::Int8PeakVnni256()}) {
      SCOPED_TRACE(k.name);
      // Half the chains use b = seed % 7 + 1, half seed % 5 + 1.
      const double b_mean = ((seed % 7 + 1) + (seed % 5 + 1)) / 2.0;
      const double products = k.ops_per_iter / 2 * iters;
      EXPECT_DOUBLE_EQ(k.run(iters, seed), products / 4 * a4 * b_mean);
    }
  }
  if (DetectCpuFeatures().avx2) {
    // Chain j uses b = (seed >> j) % 7 + 1; 6 chains of 32 products.
    const ml::PeakKernel k = ml::Int8PeakAvx2();
    double b_sum = 0;
    for (int j = 0; j < 6; ++j) b_sum += (seed >> j) % 7 + 1;
    EXPECT_DOUBLE_EQ(k.ops_per_iter, 6 * 32 * 2);
    EXPECT_DOUBLE_EQ(k.run(iters, seed), iters * 8 * a4 * b_sum);
  }
  // Scalar: 8 chains, one product each, a = seed % 63 + 1.
  const ml::PeakKernel s = ml::Int8PeakScalar();
  double b_sum = 0;
  for (int j = 0; j < 8; ++j) b_sum += (seed >> j) % 7 + 1;
  EXPECT_DOUBLE_EQ(s.ops_per_iter, 8 * 2);
  EXPECT_DOUBLE_EQ(s.run(iters, seed), iters * double(seed % 63 + 1) * b_sum);
}

TEST(MachineLimitsTest, QuickMeasurementGivesPositiveFigures) {
  ComputePool pool(2);
  auto m = MeasureMachineLimits(pool, MachineLimitsOptions{/*quick=*/true});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->threads, 2);
  for (double v : {m->read_bandwidth_gbs, m->int8_peak_gops, m->fp32_peak_gflops}) {
    EXPECT_TRUE(std::isfinite(v) && v > 0) << v;
  }
  EXPECT_FALSE(m->int8_kernel.empty());
  EXPECT_FALSE(m->fp32_kernel.empty());
}

TEST(MachineLimitsTest, CpuModelNameIsNotEmpty) { EXPECT_FALSE(CpuModelName().empty()); }

}  // namespace
}  // namespace swiftlet
