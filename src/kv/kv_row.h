// How one position's key or value row (kv_dim floats) is stored in a KV
// cache, for every cache type: F32 as is, F16 rounded to nearest even, and
// Q8_0 in blocks of 32 (an F16 scale and 32 int8), the same blocks as Q8_0
// weights. Attention reads each type back (kernels/attention_ops.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor_type.h"

namespace swiftlet {

// Bytes of one row, or 0 when `type` is not a KV type (F32, F16, Q8_0) or
// kv_dim does not fit it (Q8_0: a multiple of 32).
size_t KvRowBytes(TensorType type, int64_t kv_dim);

// Writes row `x` of kv_dim floats as `type` into `out` (KvRowBytes bytes).
void EncodeKvRow(TensorType type, const float* x, int64_t kv_dim, uint8_t* out);

// Why `type` cannot hold the KV rows of a model with this head dimension
// (Q8_0 blocks must not straddle heads), or empty when it can.
const char* KvTypeProblem(TensorType type, int64_t head_dim);

}  // namespace swiftlet
