// The SiLU gate of a gated feed-forward block:
//   gate[i] = gate[i] / (1 + e^-gate[i]) * up[i]
// with e^x computed by SiluExp, our own exponential built from IEEE float
// additions and multiplications only, so the SIMD twin can run exactly the
// same operations and match it bit for bit (a libm expf cannot be matched).
#pragma once

#include <cstdint>

#include "kernels/cpu_features.h"

namespace swiftlet {

// e^x within 2 ulp for x in [-87, 88] (clamped to it; NaN stays NaN):
// x = k ln2 + r with |r| <= ln2/2 (ln2 split in two so k ln2 is exact),
// e^r by its Taylor series to r^7 (truncation < 3e-9 relative), times 2^k
// written into the exponent bits.
float SiluExp(float x);

using SiluMulFn = void (*)(float* gate, const float* up, int64_t n);

// The scalar specification.
void SiluMulScalar(float* gate, const float* up, int64_t n);

// The twin for `isa` (the scalar one where it has none).
SiluMulFn SiluMulFor(KernelIsa isa);

}  // namespace swiftlet
