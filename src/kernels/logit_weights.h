// A sampler's weights over a row of logits, in place, with SIMD twins that
// give the same bits: the row's largest non-NaN value `max`, then
//   x[i] = SoftmaxWeight((x[i] - max) * scale)   (attention_ops.h)
// and 0 where x[i] is NaN (never drawn, as ArgMaxRow never picks one).
// With scale = 1 / temperature these are the unnormalized probabilities
// e^((x - max) / T); the largest is 1. One pass for the max, one for the
// weights: a sampled row over the whole vocabulary takes both.
#pragma once

#include <algorithm>
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

// A row of weights is summed, and drawn from, in blocks of this many ids.
inline constexpr int64_t kWeightBlock = 64;

// The sums of a row of weights (finite, >= 0) block by block, in double:
// sums[b] for ids [64b, 64b + 64) (the last block short when n is not a
// whole number of them), unless sums is null. A block's sum has a fixed
// order: lane l of 16 adds ids l, l + 16, l + 32, l + 48 (from +0), then
// the lanes fold as l += l + 8, l += l + 4, l += l + 2, l += l + 1; a short
// block is padded with +0, which leaves a sum of weights as it is. No add
// waits on the one before, and every twin gives the same bits. Returns
// sums[0] + sums[1] + ... in order. n >= 1.
using WeightBlockSumsFn = double (*)(const float* x, int64_t n, double* sums);

double WeightBlockSumsScalar(const float* x, int64_t n, double* sums);

namespace logit_weights_internal {

// WeightBlockSums over the blocks, for each twin's block_sum(const float*
// of a whole block): a short last block is padded with +0.
template <typename BlockSum>
double SumBlocks(const float* x, int64_t n, double* sums, const BlockSum& block_sum) {
  double total = 0.0;
  for (int64_t b = 0, begin = 0; begin < n; ++b, begin += kWeightBlock) {
    double sum;
    if (n - begin >= kWeightBlock) {
      sum = block_sum(x + begin);
    } else {
      float padded[kWeightBlock] = {};
      std::copy(x + begin, x + n, padded);
      sum = block_sum(padded);
    }
    if (sums != nullptr) sums[b] = sum;
    total += sum;
  }
  return total;
}

}  // namespace logit_weights_internal

WeightBlockSumsFn WeightBlockSumsFor(KernelIsa isa);
WeightBlockSumsFn WeightBlockSumsAvx2();
WeightBlockSumsFn WeightBlockSumsAvx512();

}  // namespace swiftlet
