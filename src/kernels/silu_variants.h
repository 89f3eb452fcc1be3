// SiluExp's constants, shared by the scalar specification and its SIMD
// twins so both compute with the same floats.
#pragma once

#include "kernels/silu.h"

namespace swiftlet::silu_internal {

constexpr float kMinX = -87.0f;  // e^x stays a normal float above it
constexpr float kMaxX = 88.0f;   // and below FLT_MAX under it.
constexpr float kLog2e = 1.44269504088896341f;
// ln 2 = kLn2Hi + kLn2Lo; kLn2Hi has 9 significant bits, so k * kLn2Hi is
// exact for every |k| <= 127.
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440054690583e-4f;
// 1/n! for n = 7 down to 2 (Horner from the highest power).
constexpr float kInvFact[] = {1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f};

}  // namespace swiftlet::silu_internal

namespace swiftlet {

SiluMulFn SiluMulAvx2();
SiluMulFn SiluMulAvx512();

}  // namespace swiftlet
