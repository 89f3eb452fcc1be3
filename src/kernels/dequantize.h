// Scalar reference dequantization: the specification every faster kernel is
// tested against. Results match ggml's dequantization bit for bit (the same
// float operations in the same order).
#pragma once

#include <cstdint>

#include "core/tensor_type.h"

namespace swiftlet {

// F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, Q8_K.
bool CanDequantize(TensorType type);

// Converts `n` elements (a whole number of blocks) stored as `type` at `src`
// to floats. CHECKs that the type is supported and n fits its blocks.
void DequantizeRow(TensorType type, const void* src, float* dst, int64_t n);

}  // namespace swiftlet
