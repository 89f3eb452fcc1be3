#include "kernels/silu.h"

#include "kernels/kernel_exp.h"
#include "kernels/silu_variants.h"

namespace swiftlet {

void SiluMulScalar(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + KernelExp(-gate[i])) * up[i];
}

SiluMulFn SiluMulFor(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512Vnni:
    case KernelIsa::kAvx512: return SiluMulAvx512();
    case KernelIsa::kAvxVnni:
    case KernelIsa::kAvx2: return SiluMulAvx2();
    case KernelIsa::kScalar: break;
  }
  return SiluMulScalar;
}

}  // namespace swiftlet
