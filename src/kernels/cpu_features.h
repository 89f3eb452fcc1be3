// What this x86-64 CPU (and the OS, for the wider registers) supports, read
// once from CPUID, and the kernel variant chosen from it.
#pragma once

#include <string>

namespace swiftlet {

struct CpuFeatures {
  bool avx2 = false;       // with FMA and F16C
  bool avx512 = false;     // F, BW, VL, with the OS saving ZMM state
  bool avx512_vnni = false;
  bool avx_vnni = false;   // VEX-encoded VNNI (Alder Lake and later)
};

enum class KernelIsa { kScalar, kAvx2, kAvx512, kAvx512Vnni };

const CpuFeatures& DetectCpuFeatures();
const char* KernelIsaName(KernelIsa isa);

// The best variant this CPU runs; SWIFTLET_ISA=scalar|avx2|avx512|avx512vnni
// in the environment caps it (for tests and comparisons).
KernelIsa ChosenKernelIsa();

// "avx2 fma f16c avx512f/bw/vl avx512vnni" for the features found.
std::string CpuFeatureSummary();

}  // namespace swiftlet
