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

// In the order of preference: a CPU with AVX-512 VNNI that also has
// AVX-VNNI (Sapphire Rapids, Zen 5) takes the 512-bit kernels.
enum class KernelIsa { kScalar, kAvx2, kAvxVnni, kAvx512, kAvx512Vnni };

const CpuFeatures& DetectCpuFeatures();
const char* KernelIsaName(KernelIsa isa);

// Whether this CPU runs `isa`'s kernels. Not an order: a CPU with AVX-512
// VNNI may lack AVX-VNNI (Ice Lake).
bool CpuSupports(KernelIsa isa);

// The best variant this CPU runs; SWIFTLET_ISA=scalar|avx2|avxvnni|avx512|avx512vnni
// in the environment caps it (for tests and comparisons).
KernelIsa ChosenKernelIsa();

// "avx2 fma f16c avx512f/bw/vl avx512vnni" for the features found.
std::string CpuFeatureSummary();

}  // namespace swiftlet
