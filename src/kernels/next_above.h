// The next logit above a bar, for top-k's scan over a row: the heap of the
// k best is touched only by the few logits that beat its worst, so the
// scan is a search for them, 16 ids a compare on SIMD. Every twin gives
// the same index.
#pragma once

#include <cstdint>

#include "kernels/cpu_features.h"

namespace swiftlet {

// The first i in [begin, n) with x[i] > bar (never a NaN), or n.
// 0 <= begin <= n.
using NextAboveFn = int64_t (*)(const float* x, int64_t begin, int64_t n, float bar);

// The scalar specification.
int64_t NextAboveScalar(const float* x, int64_t begin, int64_t n, float bar);

// The twin for `isa` (the scalar one where it has none).
NextAboveFn NextAboveFor(KernelIsa isa);

// The twins, each in a file compiled with its ISA's flags.
NextAboveFn NextAboveAvx2();
NextAboveFn NextAboveAvx512();

}  // namespace swiftlet
