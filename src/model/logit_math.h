// Host math on a row of logits the model returned, for the engine's
// sampler: the exponentials and the argmax on the kernels' SIMD code (the
// engine does not reach the kernels itself).
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

// The sum of x[0..n) in double, in four independent chains (one would wait
// on each add): the normalizer of ExpOfLogitsInPlace's weights.
double SumOfWeights(const float* x, int64_t n);

// ArgMaxRow's answer (core/argmax.h: the first index of the largest
// non-NaN value, kNoArgMax when none is above -inf) on this CPU's SIMD
// twin (kernels/argmax_row.h). n >= 1.
int32_t ArgMaxOfLogits(const float* x, int64_t n);

}  // namespace swiftlet
