// Every ISA variant this CPU supports against the scalar specification:
// bit-identical dot products over random shapes and contents.
#include "kernels/vec_dot.h"

#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/quantize.h"

namespace swiftlet {
namespace {

class VecDotVariantTest : public ::testing::TestWithParam<std::tuple<KernelIsa, TensorType>> {};

TEST_P(VecDotVariantTest, MatchesScalarBitForBit) {
  const auto [isa, type] = GetParam();
  if (!CpuSupports(isa)) GTEST_SKIP() << KernelIsaName(isa) << " not on this CPU";
  ASSERT_TRUE(HasSimdVecDot(isa, type)) << "no SIMD kernel registered";
  const VecDotFnPtr fn = VecDotFor(isa, type);
  const TensorType act_type = ActivationTypeFor(type);
  std::mt19937 rng(static_cast<uint32_t>(type) * 31 + static_cast<uint32_t>(isa));
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t n = 256 * (1 + rng() % 16);
    // Mix scales: most rows ordinary, some with huge or tiny values, some
    // with exact zeros, to reach saturation and rounding corners.
    const float scale = trial % 5 == 0 ? 1e3f : trial % 5 == 1 ? 1e-3f : 1.0f;
    std::normal_distribution<float> dist(0, scale);
    std::vector<float> w(n), a(n);
    for (int64_t i = 0; i < n; ++i) {
      w[i] = trial % 7 == 3 && i % 3 == 0 ? 0.0f : dist(rng);
      a[i] = dist(rng);
    }
    uint64_t wb = 0, ab = 0;
    ASSERT_TRUE(RowBytes(type, n, &wb));
    ASSERT_TRUE(RowBytes(act_type, n, &ab));
    std::vector<uint8_t> wq(wb), aq(ab);
    QuantizeRow(type, w.data(), wq.data(), n);
    QuantizeRow(act_type, a.data(), aq.data(), n);
    if (trial == 7) {
      // Raw extreme bytes (foreign files may hold -128 in Q8_0): still exact.
      for (size_t i = 0; i < wq.size(); ++i) {
        if (type == TensorType::kQ8_0 && i % 34 >= 2) wq[i] = 0x80;
      }
    }
    const float want = VecDotScalar(type, wq.data(), aq.data(), n);
    const float got = fn(wq.data(), aq.data(), n);
    EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want))
        << KernelIsaName(isa) << " " << NameOf(type) << " n=" << n << " got " << got
        << " want " << want;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllVariants, VecDotVariantTest,
    ::testing::Combine(::testing::Values(KernelIsa::kAvx2, KernelIsa::kAvxVnni, KernelIsa::kAvx512, KernelIsa::kAvx512Vnni),
                       ::testing::Values(TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K,
                                         TensorType::kQ5_K, TensorType::kQ6_K)),
    [](const auto& info) {
      return std::string(KernelIsaName(std::get<0>(info.param))) + "_" +
             std::string(NameOf(std::get<1>(info.param)));
    });

// AVX-512 without VNNI has no 512-bit dot products of its own: it must run
// AVX2's, never AVX-VNNI's (Skylake-SP and Ice Lake lack AVX-VNNI, and this
// host, which has it, would not fault). An ISA the CPU lacks gets none.
TEST(VecDotDispatchTest, EachIsaRunsOnlyInstructionsItImplies) {
  for (TensorType t : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ5_K,
                       TensorType::kQ6_K}) {
    if (CpuSupports(KernelIsa::kAvx512)) {
      EXPECT_EQ(VecDotFor(KernelIsa::kAvx512, t), VecDotFor(KernelIsa::kAvx2, t)) << NameOf(t);
    }
    for (KernelIsa isa : {KernelIsa::kAvx2, KernelIsa::kAvxVnni, KernelIsa::kAvx512, KernelIsa::kAvx512Vnni}) {
      if (!CpuSupports(isa)) {
        EXPECT_FALSE(HasSimdVecDot(isa, t)) << KernelIsaName(isa) << " " << NameOf(t);
      }
    }
  }
}

TEST(VecDotDispatchTest, DispatchUsesTheBestVariantAndMatchesScalar) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0, 1);
  std::vector<float> w(512), a(512);
  for (float& x : w) x = dist(rng);
  for (float& x : a) x = dist(rng);
  std::vector<uint8_t> wq(512 / 32 * 34), aq(512 / 32 * 34);
  QuantizeRow(TensorType::kQ8_0, w.data(), wq.data(), 512);
  QuantizeRow(TensorType::kQ8_0, a.data(), aq.data(), 512);
  EXPECT_EQ(VecDot(TensorType::kQ8_0, wq.data(), aq.data(), 512),
            VecDotScalar(TensorType::kQ8_0, wq.data(), aq.data(), 512));
  // This development machine has AVX-512 VNNI; the choice must reflect it.
  if (DetectCpuFeatures().avx512_vnni && std::getenv("SWIFTLET_ISA") == nullptr) {
    EXPECT_EQ(ChosenKernelIsa(), KernelIsa::kAvx512Vnni);
  }
}

}  // namespace
}  // namespace swiftlet
