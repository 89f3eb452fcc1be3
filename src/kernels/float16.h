// IEEE half precision (F16) and bfloat16 (BF16) conversions, in portable
// bit arithmetic so they behave the same on every CPU. Float to half rounds
// to nearest even (as F16C's _cvtss_sh with round-to-nearest does); NaN
// stays NaN, overflow becomes infinity.
#pragma once

#include <cstdint>

namespace swiftlet {

uint16_t Fp32ToFp16(float x);
float Fp16ToFp32(uint16_t h);
uint16_t Fp32ToBf16(float x);
float Bf16ToFp32(uint16_t h);

// Fp32ToFp16 over a row, with F16C where CPUID has it (its rounding is
// the same, so the bits are too).
void Fp32ToFp16Row(const float* x, uint16_t* out, int64_t n);

}  // namespace swiftlet
