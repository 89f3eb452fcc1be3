// The CUDA backend's attention (attention_kernels.cu): paged attention over
// the KV cache's block tables, for decode rows and prompt chunks alike.
// Blocks of 8 warps each take up to 4 (batch row, query head) pairs of one
// KV head, which read each key once for all of them: a GQA group's query
// heads, and a prompt chunk's rows (KvBatch::rows_per_sequence says where).
// Each pair sees the same operations in the same order whatever block it
// lands in, so a row's result depends on its own query and keys only. For
// .cu files only.
#pragma once

#include <cstdint>

#include "kernels/backend.h"

namespace swiftlet {

class CudaQueue;

namespace cuda_attention {

// Records Backend::Attention's op (kernels/backend.h): head_dim up to
// kMaxCudaHeadDim, cache rows of F32, F16 or Q8_0.
void LaunchAttention(CudaQueue& queue, const float* q, int64_t n_rows, const int32_t* positions, const KvBatch& kv,
                     const AttentionShape& shape, float* out);

}  // namespace cuda_attention
}  // namespace swiftlet
