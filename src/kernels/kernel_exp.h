// The kernels' exponential: our own e^x, built from IEEE float additions
// and multiplications only, so its SIMD twins (kernel_exp_zmm.inc,
// kernel_exp_ymm.inc) run exactly the same operations and match it bit for
// bit. A libm expf cannot be matched that way, and is slow where its
// result underflows (it sets errno there).
#pragma once

namespace swiftlet {

// e^x within 2 ulp for x in [-87, 88] (clamped to it; NaN stays NaN):
// x = k ln2 + r with |r| <= ln2/2 (ln2 split in two so k ln2 is exact),
// e^r by its Taylor series to r^7 (truncation < 3e-9 relative), times 2^k
// written into the exponent bits.
float KernelExp(float x);

namespace kernel_exp_internal {

constexpr float kMinX = -87.0f;  // e^x stays a normal float above it
constexpr float kMaxX = 88.0f;   // and below FLT_MAX under it.
constexpr float kLog2e = 1.44269504088896341f;
// ln 2 = kLn2Hi + kLn2Lo; kLn2Hi has 9 significant bits, so k * kLn2Hi is
// exact for every |k| <= 127.
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440054690583e-4f;
// 1/n! for n = 7 down to 2 (Horner from the highest power).
constexpr float kInvFact[] = {1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f};

}  // namespace kernel_exp_internal

}  // namespace swiftlet
