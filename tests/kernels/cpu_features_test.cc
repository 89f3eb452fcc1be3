// The kernel variant choice: the best the CPU runs, capped by a name, never
// one whose instructions the CPU lacks. CPUs are described by their flags,
// so every case runs on any host.
#include "kernels/cpu_features.h"

#include <gtest/gtest.h>

namespace swiftlet {
namespace {

constexpr KernelIsa kAllIsas[] = {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvxVnni, KernelIsa::kAvx512,
                              KernelIsa::kAvx512Vnni};

CpuFeatures Haswell() { return {.avx2 = true}; }
CpuFeatures AlderLake() { return {.avx2 = true, .avx_vnni = true}; }
CpuFeatures SkylakeX() { return {.avx2 = true, .avx512 = true}; }
CpuFeatures IceLake() { return {.avx2 = true, .avx512 = true, .avx512_vnni = true}; }
CpuFeatures Zen5() { return {.avx2 = true, .avx512 = true, .avx512_vnni = true, .avx_vnni = true}; }

TEST(ChooseKernelIsaTest, UncappedTakesTheWidestTheCpuHas) {
  EXPECT_EQ(ChooseKernelIsa(CpuFeatures{}, nullptr), KernelIsa::kScalar);
  EXPECT_EQ(ChooseKernelIsa(Haswell(), nullptr), KernelIsa::kAvx2);
  EXPECT_EQ(ChooseKernelIsa(AlderLake(), nullptr), KernelIsa::kAvxVnni);
  EXPECT_EQ(ChooseKernelIsa(SkylakeX(), nullptr), KernelIsa::kAvx512);
  EXPECT_EQ(ChooseKernelIsa(IceLake(), nullptr), KernelIsa::kAvx512Vnni);
  EXPECT_EQ(ChooseKernelIsa(Zen5(), nullptr), KernelIsa::kAvx512Vnni);
}

TEST(ChooseKernelIsaTest, ACapFallsToTheBestSupportedVariantBelowIt) {
  EXPECT_EQ(ChooseKernelIsa(Zen5(), "avxvnni"), KernelIsa::kAvxVnni);
  EXPECT_EQ(ChooseKernelIsa(Zen5(), "avx512"), KernelIsa::kAvx512);
  EXPECT_EQ(ChooseKernelIsa(Zen5(), "avx2"), KernelIsa::kAvx2);
  EXPECT_EQ(ChooseKernelIsa(Zen5(), "scalar"), KernelIsa::kScalar);
  // Ice Lake has AVX-512 VNNI but not the VEX AVX-VNNI: never chosen there.
  EXPECT_EQ(ChooseKernelIsa(IceLake(), "avxvnni"), KernelIsa::kAvx2);
  // A cap above what the CPU has changes nothing.
  EXPECT_EQ(ChooseKernelIsa(AlderLake(), "avx512vnni"), KernelIsa::kAvxVnni);
  EXPECT_EQ(ChooseKernelIsa(Haswell(), "avx512"), KernelIsa::kAvx2);
  EXPECT_EQ(ChooseKernelIsa(Haswell(), "avx1024"), KernelIsa::kAvx2);
  EXPECT_EQ(ChooseKernelIsa(SkylakeX(), ""), KernelIsa::kAvx512);
}

TEST(ChooseKernelIsaTest, NeverAVariantTheCpuLacksWhateverTheCap) {
  for (const CpuFeatures& f : {CpuFeatures{}, Haswell(), AlderLake(), SkylakeX(), IceLake(), Zen5()}) {
    for (KernelIsa cap : kAllIsas) {
      const KernelIsa chosen = ChooseKernelIsa(f, KernelIsaName(cap));
      EXPECT_TRUE(Supports(f, chosen)) << KernelIsaName(chosen) << " under cap " << KernelIsaName(cap);
      EXPECT_LE(chosen, cap);
      // Nothing better the CPU runs lies between the choice and the cap.
      for (KernelIsa isa : kAllIsas) {
        if (isa > chosen && isa <= cap) {
          EXPECT_FALSE(Supports(f, isa)) << KernelIsaName(isa);
        }
      }
    }
  }
}

TEST(ChooseKernelIsaTest, ThisCpuRunsItsChoice) {
  EXPECT_TRUE(CpuSupports(ChosenKernelIsa()));
  EXPECT_TRUE(CpuSupports(KernelIsa::kScalar));
}

}  // namespace
}  // namespace swiftlet
