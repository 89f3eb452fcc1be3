// Scalar reference quantization: F32 rows into each storage format.
//
// Our own quantizers, written from the math: per block they choose scales
// that minimise the squared error, then store them in the block's format.
// The activation formats (Q8_0 for the 32-wide weight types, Q8_K for the K
// types) are what the matmul kernels quantize activations to, so their
// functions are exposed on their own.
#pragma once

#include <cstdint>

#include "core/tensor_type.h"
#include "kernels/quant_blocks.h"

namespace swiftlet {

// F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, Q8_K.
bool CanQuantize(TensorType type);

// Stores `n` floats (a whole number of blocks) as `type` at `dst`, which
// holds RowBytes(type, n) bytes. CHECKs the type and n.
void QuantizeRow(TensorType type, const float* src, void* dst, int64_t n);

// The activation quantizers: d = max|x| / 127, q = round(x / d).
void QuantizeRowQ8_0(const float* x, BlockQ8_0* y, int64_t n);
void QuantizeRowQ8_K(const float* x, BlockQ8_K* y, int64_t n);

}  // namespace swiftlet
