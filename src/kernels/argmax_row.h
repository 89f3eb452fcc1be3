// The greedy argmax of a row (core/argmax.h's ArgMaxRow is the
// specification) with SIMD twins that give the same index on every row:
// the first index of the largest non-NaN value, kNoArgMax when none is
// above -inf. A greedy step takes one per sequence over the whole
// vocabulary.
#pragma once

#include <cstdint>

#include "kernels/cpu_features.h"

namespace swiftlet {

// Rows of n >= 1 values.
using ArgMaxRowFn = int32_t (*)(const float* x, int64_t n);

// The twin for `isa` (ArgMaxRow itself where it has none).
ArgMaxRowFn ArgMaxRowFor(KernelIsa isa);

}  // namespace swiftlet
