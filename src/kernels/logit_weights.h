// A sampler's weights over a row of logits, in place, with SIMD twins that
// give the same bits: the row's largest non-NaN value `max`, then
//   x[i] = SoftmaxWeight((x[i] - max) * scale)   (attention_ops.h)
// and 0 where x[i] is NaN (never drawn, as ArgMaxRow never picks one).
// With scale = 1 / temperature these are the unnormalized probabilities
// e^((x - max) / T); the largest is 1. One pass for the max, one for the
// weights: a sampled row over the whole vocabulary takes both.
#pragma once

#include <cstdint>

#include "kernels/cpu_features.h"

namespace swiftlet {

// Returns max (+0 where it is a zero); when it is not finite (every value -inf or NaN, or a +inf)
// the row is left as it was. n >= 1; scale > 0 and finite.
using LogitWeightsFn = float (*)(float* x, int64_t n, float scale);

// The scalar specification.
float LogitWeightsScalar(float* x, int64_t n, float scale);

// The twin for `isa` (the scalar one where it has none).
LogitWeightsFn LogitWeightsFor(KernelIsa isa);

// The twins, each in a file compiled with its ISA's flags.
LogitWeightsFn LogitWeightsAvx2();
LogitWeightsFn LogitWeightsAvx512();

}  // namespace swiftlet
