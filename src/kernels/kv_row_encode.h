// How one position's key or value row (kv_dim floats) is written into a KV
// cache of each type (kv/kv_row.h): F32 as is, F16 rounded to nearest even,
// Q8_0 quantized like a weight row.
#pragma once

#include <cstdint>

#include "core/tensor_type.h"

namespace swiftlet {

// Writes row `x` of kv_dim floats as `type` (F32, F16 or Q8_0, kv_dim a
// multiple of 32) into `out`.
void EncodeKvRow(TensorType type, const float* x, int64_t kv_dim, uint8_t* out);

}  // namespace swiftlet
