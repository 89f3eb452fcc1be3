#include "kernels/float16.h"

#include <bit>

#include "kernels/cpu_features.h"

namespace swiftlet {

float Fp16ToFp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000 | (mant << 13);  // Inf or NaN (payload kept).
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;  // Signed zero.
  } else {
    // Subnormal half: normalise into a float.
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while ((mant & 0x400) == 0);
    bits = sign | ((112 - e) << 23) | ((mant & 0x3FF) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t Fp32ToFp16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t abs = bits & 0x7FFFFFFF;
  if (abs > 0x7F800000) {
    return static_cast<uint16_t>(sign | 0x7E00 | ((abs >> 13) & 0x3FF));  // Quiet NaN.
  }
  if (abs >= 0x477FF000) return sign | 0x7C00;  // Rounds past 65504: infinity.
  if (abs < 0x38800000) {
    // Result is subnormal (or zero): value / 2^-24, rounded to nearest even.
    if (abs < 0x33000000) return sign;  // Below half the smallest subnormal.
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7FFFFF) | 0x800000;
    const uint32_t shift = 126 - exp;  // From 24-bit mantissa to units of 2^-24.
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: rebias the exponent, round the 13 dropped bits to nearest even.
  uint32_t h = ((abs >> 13) - (112u << 10));
  const uint32_t rem = abs & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // May carry into the exponent.
  return static_cast<uint16_t>(sign | h);
}

uint16_t Fp32ToBf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) {
    return static_cast<uint16_t>((bits >> 16) | 0x40);  // Quiet NaN.
  }
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float Bf16ToFp32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// float16_f16c.cc, compiled with the F16C flags.
void Fp32ToFp16RowF16c(const float* x, uint16_t* out, int64_t n);

void Fp32ToFp16Row(const float* x, uint16_t* out, int64_t n) {
  // The AVX2 level requires F16C (cpu_features.cc).
  static const bool f16c = ChosenKernelIsa() >= KernelIsa::kAvx2;
  if (f16c) return Fp32ToFp16RowF16c(x, out, n);
  for (int64_t i = 0; i < n; ++i) out[i] = Fp32ToFp16(x[i]);
}

}  // namespace swiftlet
