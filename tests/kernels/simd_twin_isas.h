// The SIMD ISAs whose kernel twins this CPU runs, for the tests that
// compare each twin with its scalar specification (empty without AVX2:
// those tests then skip, saying so).
#pragma once

#include <vector>

#include "kernels/cpu_features.h"

namespace swiftlet {

inline std::vector<KernelIsa> SimdTwinIsasOnThisCpu() {
  std::vector<KernelIsa> isas;
  for (KernelIsa isa : {KernelIsa::kAvx2, KernelIsa::kAvxVnni, KernelIsa::kAvx512, KernelIsa::kAvx512Vnni}) {
    if (CpuSupports(isa)) isas.push_back(isa);
  }
  return isas;
}

}  // namespace swiftlet
