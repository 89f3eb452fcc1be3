// Host math on a row of logits the model returned, for the engine's
// sampler: the exponentials, their block sums and the draw from them,
// top-p's and min-p's split of the ids, and the argmax, on the kernels'
// SIMD code (the engine does not reach the kernels itself).
#pragma once

#include <cstdint>

namespace swiftlet {

// p[i] = e^((x[i] - max) / temperature) in place, where max is the row's
// largest value (so the largest p is 1); 0 where the exponent is below
// -87 (under 2^-125 of the largest), and 0 for NaN (never drawn, as
// ArgMaxRow never picks one; max skips them). The exponent is (x[i] - max)
// times 1 / temperature (divided by it when that overflows); the exp is
// within 2 ulp (kernels/kernel_exp.h), and the whole is
// kernels/logit_weights.h's, the same bits on every ISA. Returns max; when
// it is not finite (every x -inf or NaN: -inf; or a +inf), x is left as it
// was. n >= 1, temperature > 0.
float ExpOfLogitsInPlace(float* x, int64_t n, float temperature);

// How many block sums a row of n weights has (blocks of 64 ids,
// kernels/logit_weights.h's kWeightBlock).
int64_t WeightBlocks(int64_t n);

// kernels/logit_weights.h's block sums of a row of weights (finite, >= 0)
// on this CPU's SIMD twin (the same bits on every one): sums[b] for ids
// [64b, 64b + 64), WeightBlocks(n) of them; returns their sum in order, the
// normalizer of ExpOfLogitsInPlace's weights and the total that
// DrawFromWeights walks. n >= 1.
double WeightBlockSums(const float* x, int64_t n, double* sums);

// WeightBlockSums' total (the same bits) without keeping the block sums.
double SumOfWeights(const float* x, int64_t n);

// The first id whose running sum passes target, over weights x (finite, >=
// 0) and their WeightBlockSums: the blocks' running sum finds the block,
// then that block's ids are added to what the blocks before it sum to.
// Never an id of weight 0. Where rounding leaves target at or past the
// sum (of the row, or of the block the blocks' sums pointed to), the last
// id of weight above 0 there. 0 <= target; n >= 1, some x above 0.
int64_t DrawFromWeights(const float* x, int64_t n, const double* sums, double target);

// kernels/split_ids.h's split of a row of weights (>= +0) on this CPU's
// SIMD twin: the ids whose weights' bits are >= hi to `above`, those in
// [lo, hi) to `at`, both in id order; returns how many went to `above`,
// *n_at the rest. Each buffer has room for SplitIdsRoom(n) ids.
int64_t SplitIdsByBits(const float* p, int64_t n, uint32_t lo, uint32_t hi, int32_t* above, int32_t* at,
                       int64_t* n_at);
int64_t SplitIdsRoom(int64_t n);

// kernels/next_above.h on this CPU's SIMD twin: the first i in [begin, n)
// with x[i] > bar (never a NaN), or n. 0 <= begin <= n.
int64_t NextAbove(const float* x, int64_t begin, int64_t n, float bar);

// ArgMaxRow's answer (core/argmax.h: the first index of the largest
// non-NaN value, kNoArgMax when none is above -inf) on this CPU's SIMD
// twin (kernels/argmax_row.h). n >= 1.
int32_t ArgMaxOfLogits(const float* x, int64_t n);

}  // namespace swiftlet
