// The inner loops of attention, with a fixed summation order so every ISA
// variant gives the scalar twin's result bit for bit.
//
// A q·k dot product is summed in 16 lanes (element i into lane i % 16,
// multiply then add, in element order), then the lanes are folded in a
// fixed tree: lane l += lane l+8, then l+4, l+2, l+1. That is the order a
// 16-wide (or two 8-wide) register computes in, so the SIMD variants need
// no horizontal reordering, and the scalar twin below is the specification.
// Keys and values come as F32, F16 or Q8_0 cache rows, widened exactly to
// floats first (an F16 value, or a Q8_0 block's F16 scale times its int8:
// 11 + 8 significant bits, exact in a float).
#pragma once

#include <cstdint>

#include "kernels/cpu_features.h"
#include "kernels/quant_blocks.h"

namespace swiftlet {

struct AttentionOps {
  float (*dot_f32)(const float* q, const float* k, int64_t n);
  float (*dot_f16)(const float* q, const uint16_t* k, int64_t n);
  // acc[i] = acc[i] + p * v[i]
  void (*axpy_f32)(float* acc, float p, const float* v, int64_t n);
  void (*axpy_f16)(float* acc, float p, const uint16_t* v, int64_t n);
  // Q8_0 rows: n is a multiple of 32, n / 32 blocks.
  float (*dot_q8_0)(const float* q, const BlockQ8_0* k, int64_t n);
  void (*axpy_q8_0)(float* acc, float p, const BlockQ8_0* v, int64_t n);

  // The same for the `group` query heads of a GQA group, each head's
  // arithmetic exactly its single-head op's (so the results are those ops'
  // bit for bit): a key row is widened once for all heads instead of once
  // per head. q, acc: `group` consecutive rows of n; out[h] = q_h · k.
  void (*dot_group_f32)(const float* q, int64_t group, const float* k, int64_t n, float* out);
  void (*dot_group_f16)(const float* q, int64_t group, const uint16_t* k, int64_t n, float* out);
  void (*dot_group_q8_0)(const float* q, int64_t group, const BlockQ8_0* k, int64_t n, float* out);
  // Value rows v[0..rows) in order, each added to every head's
  // accumulator: acc_h[i] = acc_h[i] + p[j * group + h] * v[j][i] for j =
  // 0, 1, ... (the single-head Axpy per row and head, in that order), the
  // accumulators kept in registers across the rows rather than loaded and
  // stored once a row.
  void (*axpy_rows_f32)(float* acc, int64_t group, const float* p, const float* const* v, int64_t rows, int64_t n);
  void (*axpy_rows_f16)(float* acc, int64_t group, const float* p, const uint16_t* const* v, int64_t rows,
                        int64_t n);
  void (*axpy_rows_q8_0)(float* acc, int64_t group, const float* p, const BlockQ8_0* const* v, int64_t rows,
                         int64_t n);

  // One head's softmax weights over n scores, in place:
  // s[j] = SoftmaxWeight(s[j] - max); returns their sum, added in the dot
  // products' order (weight j into lane j % 16, in j order, then the fold).
  float (*softmax_weights)(float* s, int64_t n, float max);
};

// e^x for x <= 0, a score's distance below the maximum: KernelExp's value
// at and above -87, and 0 below it, where KernelExp would clamp. Such a key
// weighs under 2^-125 of the maximum's (whose weight is 1), far below what
// a float sum of weights can hold, and a key of weight 0 for every head of
// a group needs no value row read.
float SoftmaxWeight(float x);

// The scalar specification.
const AttentionOps& AttentionOpsScalar();
// The variant for `isa`, for head dimensions that are a multiple of 16
// (otherwise, or without a variant, the scalar ops).
const AttentionOps& AttentionOpsFor(KernelIsa isa, int64_t head_dim);

}  // namespace swiftlet
