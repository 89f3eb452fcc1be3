// The kernel variant choice: the best the CPU runs, capped by SWIFTLET_ISA,
// never one whose instructions the CPU lacks.
#include "kernels/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace swiftlet {
namespace {

// Restores SWIFTLET_ISA when the test ends.
class IsaEnv {
 public:
  IsaEnv() {
    if (const char* v = std::getenv("SWIFTLET_ISA")) saved_ = v, had_ = true;
  }
  ~IsaEnv() {
    if (had_) {
      setenv("SWIFTLET_ISA", saved_.c_str(), 1);
    } else {
      unsetenv("SWIFTLET_ISA");
    }
  }

 private:
  std::string saved_;
  bool had_ = false;
};

// The expected choice, written from the CPUID flags directly: the first of
// the preference order at or below the cap that the flags allow.
KernelIsa Expected(KernelIsa cap) {
  const CpuFeatures& f = DetectCpuFeatures();
  if (cap >= KernelIsa::kAvx512Vnni && f.avx512_vnni) return KernelIsa::kAvx512Vnni;
  if (cap >= KernelIsa::kAvx512 && f.avx512) return KernelIsa::kAvx512;
  if (cap >= KernelIsa::kAvxVnni && f.avx_vnni) return KernelIsa::kAvxVnni;
  if (cap >= KernelIsa::kAvx2 && f.avx2) return KernelIsa::kAvx2;
  return KernelIsa::kScalar;
}

TEST(ChosenKernelIsaTest, EachCapGivesTheBestSupportedVariantAtOrBelowIt) {
  IsaEnv restore;
  for (KernelIsa cap : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvxVnni, KernelIsa::kAvx512,
                        KernelIsa::kAvx512Vnni}) {
    ASSERT_EQ(setenv("SWIFTLET_ISA", KernelIsaName(cap), 1), 0);
    const KernelIsa chosen = ChosenKernelIsa();
    EXPECT_EQ(chosen, Expected(cap)) << "cap " << KernelIsaName(cap);
    EXPECT_TRUE(CpuSupports(chosen)) << KernelIsaName(chosen);
  }
}

TEST(ChosenKernelIsaTest, UnknownOrMissingCapMeansNoCap) {
  IsaEnv restore;
  ASSERT_EQ(setenv("SWIFTLET_ISA", "avx1024", 1), 0);
  EXPECT_EQ(ChosenKernelIsa(), Expected(KernelIsa::kAvx512Vnni));
  ASSERT_EQ(unsetenv("SWIFTLET_ISA"), 0);
  EXPECT_EQ(ChosenKernelIsa(), Expected(KernelIsa::kAvx512Vnni));
}

TEST(ChosenKernelIsaTest, NamesRoundTrip) {
  EXPECT_STREQ(KernelIsaName(KernelIsa::kAvxVnni), "avxvnni");
  EXPECT_STREQ(KernelIsaName(KernelIsa::kAvx512Vnni), "avx512vnni");
  EXPECT_TRUE(CpuSupports(KernelIsa::kScalar));
}

}  // namespace
}  // namespace swiftlet
