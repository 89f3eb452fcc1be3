#include "kernels/kernel_exp.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace swiftlet {

float KernelExp(float x) {
  using namespace kernel_exp_internal;
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

}  // namespace swiftlet
