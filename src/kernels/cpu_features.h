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

// Whether a CPU with `f` runs `isa`'s kernels. Not an order: a CPU with
// AVX-512 VNNI may lack AVX-VNNI (Ice Lake), one with AVX-VNNI AVX-512
// (Alder Lake).
bool Supports(const CpuFeatures& f, KernelIsa isa);
bool CpuSupports(KernelIsa isa);  // this CPU's

// The best variant `f` runs that is not above the one named `cap`
// (KernelIsaName's names; null or an unknown name: no cap).
KernelIsa ChooseKernelIsa(const CpuFeatures& f, const char* cap);

// ChooseKernelIsa for this CPU, capped by
// SWIFTLET_ISA=scalar|avx2|avxvnni|avx512|avx512vnni in the environment (for
// tests and comparisons); decided once, at the first call, so every kernel
// table agrees.
KernelIsa ChosenKernelIsa();

// "avx2+fma+f16c avx512f/bw/vl avx512vnni avxvnni" for the features found
// ("none" without AVX2).
std::string CpuFeatureSummary();

}  // namespace swiftlet
