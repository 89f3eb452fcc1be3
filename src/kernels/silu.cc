#include "kernels/silu.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "kernels/silu_variants.h"

namespace swiftlet {

float SiluExp(float x) {
  using namespace silu_internal;
  if (std::isnan(x)) return x;
  x = std::min(std::max(x, kMinX), kMaxX);
  const float k = std::nearbyint(x * kLog2e);
  float r = x - k * kLn2Hi;
  r = r - k * kLn2Lo;
  float p = kInvFact[0];
  for (int i = 1; i < 6; ++i) p = p * r + kInvFact[i];
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((static_cast<int32_t>(k) + 127) << 23);
}

void SiluMulScalar(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + SiluExp(-gate[i])) * up[i];
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
