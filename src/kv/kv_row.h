// The KV cache's row types: F32, F16 and Q8_0 (blocks of 32: an F16 scale
// and 32 int8, the same blocks as Q8_0 weights). The backend writes rows
// (kernels/kv_row_encode.h) and attention reads them back
// (kernels/attention_ops.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor_type.h"

namespace swiftlet {

// Bytes of one row, or 0 when `type` is not a KV type (F32, F16, Q8_0) or
// kv_dim does not fit it (Q8_0: a multiple of 32).
size_t KvRowBytes(TensorType type, int64_t kv_dim);

// Why `type` cannot hold the KV rows of a model with this head dimension
// (Q8_0 blocks must not straddle heads), or empty when it can.
const char* KvTypeProblem(TensorType type, int64_t head_dim);

}  // namespace swiftlet
