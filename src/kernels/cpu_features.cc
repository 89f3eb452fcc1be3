#include "kernels/cpu_features.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>

namespace swiftlet {
namespace {

uint64_t Xgetbv() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures Detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & bit_OSXSAVE;
  const bool fma = c & bit_FMA;
  const bool f16c = c & bit_F16C;
  const bool avx = c & bit_AVX;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = Xgetbv();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;
  const bool zmm_state = (xcr0 & 0xE6) == 0xE6;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  const unsigned max_subleaf = a;
  f.avx2 = ymm_state && (b & bit_AVX2) && fma && f16c;
  // The AVX-512 variants also run AVX2, FMA and F16C code (their 256-bit
  // parts, the F16 conversions): a CPU (or VM) that hides those gets none.
  f.avx512 = f.avx2 && zmm_state && (b & bit_AVX512F) && (b & bit_AVX512BW) && (b & bit_AVX512VL);
  f.avx512_vnni = f.avx512 && (c & bit_AVX512VNNI);
  unsigned a1, b1, c1, d1;
  if (max_subleaf >= 1 && __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1)) {
    f.avx_vnni = f.avx2 && (a1 & (1u << 4));
  }
  return f;
}

}  // namespace

const CpuFeatures& DetectCpuFeatures() {
  static const CpuFeatures features = Detect();
  return features;
}

const char* KernelIsaName(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kScalar: return "scalar";
    case KernelIsa::kAvx2: return "avx2";
    case KernelIsa::kAvxVnni: return "avxvnni";
    case KernelIsa::kAvx512: return "avx512";
    case KernelIsa::kAvx512Vnni: return "avx512vnni";
  }
  return "unknown";
}

bool Supports(const CpuFeatures& f, KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kScalar: return true;
    case KernelIsa::kAvx2: return f.avx2;
    case KernelIsa::kAvxVnni: return f.avx_vnni;
    case KernelIsa::kAvx512: return f.avx512;
    case KernelIsa::kAvx512Vnni: return f.avx512_vnni;
  }
  return false;
}

bool CpuSupports(KernelIsa isa) { return Supports(DetectCpuFeatures(), isa); }

KernelIsa ChooseKernelIsa(const CpuFeatures& f, const char* cap_name) {
  constexpr KernelIsa kBestFirst[] = {KernelIsa::kAvx512Vnni, KernelIsa::kAvx512, KernelIsa::kAvxVnni,
                                      KernelIsa::kAvx2, KernelIsa::kScalar};
  KernelIsa cap = KernelIsa::kAvx512Vnni;
  if (cap_name != nullptr) {
    for (KernelIsa isa : kBestFirst) {
      if (std::strcmp(cap_name, KernelIsaName(isa)) == 0) cap = isa;
    }
  }
  for (KernelIsa isa : kBestFirst) {
    if (isa <= cap && Supports(f, isa)) return isa;
  }
  return KernelIsa::kScalar;
}

KernelIsa ChosenKernelIsa() {
  static const KernelIsa chosen = ChooseKernelIsa(DetectCpuFeatures(), std::getenv("SWIFTLET_ISA"));
  return chosen;
}

std::string CpuFeatureSummary() {
  const CpuFeatures& f = DetectCpuFeatures();
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2, "avx2+fma+f16c");
  add(f.avx512, "avx512f/bw/vl");
  add(f.avx512_vnni, "avx512vnni");
  add(f.avx_vnni, "avxvnni");
  return s.empty() ? "none" : s;
}

}  // namespace swiftlet
