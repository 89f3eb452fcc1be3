// The SiLU gate of a gated feed-forward block:
//   gate[i] = gate[i] / (1 + e^-gate[i]) * up[i]
// with e^x computed by KernelExp (kernel_exp.h), so the SIMD twins run
// exactly the same operations and match it bit for bit.
#pragma once

#include <cstdint>

#include "kernels/cpu_features.h"

namespace swiftlet {

using SiluMulFn = void (*)(float* gate, const float* up, int64_t n);

// The scalar specification.
void SiluMulScalar(float* gate, const float* up, int64_t n);

// The twin for `isa` (the scalar one where it has none).
SiluMulFn SiluMulFor(KernelIsa isa);

}  // namespace swiftlet
