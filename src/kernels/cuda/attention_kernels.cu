// Attention's kernels (attention_kernels.h). A warp takes keys across its
// lanes (AttendTile): each lane a whole key's dot products against the
// block's queries in shared memory, then per tile of 32 keys one max, the
// exps and one butterfly sum, and the values key by key. The 8 warps of a
// block take every 8th tile and merge their online-softmax states in order.
#include "kernels/cuda/attention_kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/check.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_queue.h"
#include "kernels/cuda/device_math.h"
#include "kernels/quant_blocks.h"

namespace swiftlet::cuda_attention {
namespace {

using cuda_device::ElementOf;
using cuda_device::Half;
using cuda_device::KvRow;
using cuda_device::kWarp;
using cuda_device::WarpSum;

// Warps sharing one (row, query head) in AttentionKernel, and the keys of
// one warp's tile (one per lane).
constexpr int kAttentionSplit = 8;
constexpr int kKeyTile = kWarp;

// Where head kvh of a cache row of kType starts (Q8_0: a whole block, as
// head_dim is a multiple of 32 there: kv/kv_row.h).
template <TensorType kType>
__device__ const uint8_t* HeadOf(const uint8_t* row, int64_t kvh, int64_t head_dim) {
  if constexpr (kType == TensorType::kQ8_0) {
    return row + static_cast<size_t>(kvh * head_dim / BlockQ8_0::kElems) * sizeof(BlockQ8_0);
  } else {
    return row + static_cast<size_t>(kvh * head_dim) * (kType == TensorType::kF16 ? 2 : 4);
  }
}

// A lane's elements e = lane + 32 d of a head (0 past head_dim): the type
// is a template argument, so the loads are straight-line code.
template <TensorType kType, int kDims>
__device__ void LoadHead(const uint8_t* head, int64_t head_dim, int lane, int dims, float (&out)[kDims]) {
#pragma unroll
  for (int d = 0; d < kDims; ++d) {
    const int64_t e = lane + d * kWarp;
    out[d] = d < dims && e < head_dim ? ElementOf<kType>(head, e) : 0.0f;
  }
}

// Whether a head of kType at `head` allows Load4's wide loads (8 bytes for
// F16, 16 for F32): always so for heads and rows of a multiple of 4
// elements from cudaMalloc, but checked rather than assumed.
template <TensorType kType>
__device__ bool WideLoads(const uint8_t* head) {
  return reinterpret_cast<uintptr_t>(head) % (kType == TensorType::kF16 ? 8 : kType == TensorType::kF32 ? 16 : 1) == 0;
}

// Elements e .. e + 3 of a head (e a multiple of 4, all below head_dim;
// Q8_0's four are in one block), in one load where `wide` says it may.
// The same values either way.
template <TensorType kType>
__device__ void Load4(const uint8_t* head, int64_t e, bool wide, float (&k)[4]) {
  if constexpr (kType == TensorType::kQ8_0) {
    const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(head)[e / BlockQ8_0::kElems];
    const float d = Half(b.d);
#pragma unroll
    for (int i = 0; i < 4; ++i) k[i] = d * static_cast<float>(b.qs[e % BlockQ8_0::kElems + i]);
  } else if constexpr (kType == TensorType::kF16) {
    if (wide) {
      const uint2 w = *reinterpret_cast<const uint2*>(head + 2 * e);
      k[0] = Half(static_cast<uint16_t>(w.x));
      k[1] = Half(static_cast<uint16_t>(w.x >> 16));
      k[2] = Half(static_cast<uint16_t>(w.y));
      k[3] = Half(static_cast<uint16_t>(w.y >> 16));
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) k[i] = ElementOf<kType>(head, e + i);
    }
  } else {
    if (wide) {
      const float4 w = *reinterpret_cast<const float4*>(head + 4 * e);
      k[0] = w.x;
      k[1] = w.y;
      k[2] = w.z;
      k[3] = w.w;
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) k[i] = ElementOf<kType>(head, e + i);
    }
  }
}

// One warp's online-softmax state for kN (row, query head) pairs over the
// keys it takes: per row the running max and the sum of exp(score - max)
// (the same in every lane), and the lane's kDims output dimensions
// (e = lane + 32 d).
template <int kN, int kDims>
struct SoftmaxStates {
  float max[kN], sum[kN], acc[kN][kDims];
  __device__ SoftmaxStates() {
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      max[n] = -INFINITY;  // A warp with no keys keeps these.
      sum[n] = 0;
#pragma unroll
      for (int d = 0; d < kDims; ++d) acc[n][d] = 0;
    }
  }
};

// One warp's step over the tile of keys base .. base + 31 of row t's
// sequence (KV head kvh) for kN (row, query head) pairs (queries qs[n], in
// shared memory and padded with zeros to a multiple of 4; pair n sees keys
// up to last[n], none when it is -1: another row's pair, or none at all,
// whose state stays as it was). Keys go across lanes: lane i takes key
// base + i's whole dot product with each query, in order of the
// dimensions; then, per pair, the tile's max (exact in any order), the
// exps, their sum through a fixed butterfly, and the values' weighted sum
// over the tile's keys in order. Every operation on a pair's state is the
// same whatever kN and whichever pairs share the call, so a row's result
// depends on its own query and keys only.
template <TensorType kType, int kN, int kDims>
__device__ void AttendTile(const KvBatch& kv, int64_t t, int64_t base, const AttentionShape& s, int64_t kvh,
                           int lane, int dims, const float* const (&qs)[kN], const int64_t (&last)[kN],
                           SoftmaxStates<kN, kDims>& st) {
  int64_t tile_last = -1;
#pragma unroll
  for (int n = 0; n < kN; ++n) tile_last = max(tile_last, last[n]);
  const int64_t j = base + lane;
  float score[kN];
#pragma unroll
  for (int n = 0; n < kN; ++n) score[n] = -INFINITY;
  if (j <= tile_last) {  // Lanes differ here; no shuffle inside.
    const uint8_t* head = HeadOf<kType>(KvRow(kv, t, j, kv.layer.k_offset), kvh, s.head_dim);
    const bool wide = WideLoads<kType>(head);
    float dot[kN];
#pragma unroll
    for (int n = 0; n < kN; ++n) dot[n] = 0;
    // Four dimensions at a time (the queries are zero past head_dim, up to
    // a multiple of 4); a head of another size, which no model has, takes
    // its last elements one by one: the same products either way.
    const int64_t whole = s.head_dim / 4 * 4;
#pragma unroll 2
    for (int64_t e = 0; e < whole + 4 * (s.head_dim % 4 != 0); e += 4) {
      float k[4];
      if (e < whole) {
        Load4<kType>(head, e, wide, k);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) k[i] = e + i < s.head_dim ? ElementOf<kType>(head, e + i) : 0.0f;
      }
#pragma unroll
      for (int n = 0; n < kN; ++n) {
        const float4 qv = *reinterpret_cast<const float4*>(qs[n] + e);
        dot[n] = dot[n] + qv.x * k[0];
        dot[n] = dot[n] + qv.y * k[1];
        dot[n] = dot[n] + qv.z * k[2];
        dot[n] = dot[n] + qv.w * k[3];
      }
    }
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      if (j <= last[n]) score[n] = dot[n] * s.scale;
    }
  }
  float p[kN];
#pragma unroll
  for (int n = 0; n < kN; ++n) {
    p[n] = 0;
    if (base > last[n]) continue;  // The same in every lane: no key here for row n.
    float tile_max = score[n];
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, offset));
    }
    const float new_max = fmaxf(st.max[n], tile_max);
    // The hardware's exp2 (__expf: two instructions, not expf's eleven; a
    // few ulps, far inside what the CPU comparison allows). exp(-inf) is 0:
    // keys past last[n], and the state's first max.
    const float correction = __expf(st.max[n] - new_max);
    p[n] = __expf(score[n] - new_max);
    st.sum[n] = st.sum[n] * correction + WarpSum(p[n]);
#pragma unroll
    for (int d = 0; d < kDims; ++d) st.acc[n][d] = st.acc[n][d] * correction;
    st.max[n] = new_max;
  }
  // The values, key by key; a row skips keys past its last (their cache
  // rows may hold anything) and keys of weight 0 (so an F16 value stored
  // as inf adds nothing rather than NaN).
  const int keys = static_cast<int>(min(static_cast<int64_t>(kKeyTile), tile_last - base + 1));
  for (int i = 0; i < keys; ++i) {
    float v[kDims];
    LoadHead<kType>(HeadOf<kType>(KvRow(kv, t, base + i, kv.layer.v_offset), kvh, s.head_dim), s.head_dim, lane,
                    dims, v);
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      const float pi = __shfl_sync(0xffffffffu, p[n], i);
      if (base + i > last[n] || pi == 0.0f) continue;
#pragma unroll
      for (int d = 0; d < kDims; ++d) st.acc[n][d] = st.acc[n][d] + pi * v[d];
    }
  }
}

// How AttentionKernel's blocks divide the work: each takes up to kSlots
// (row, query head) pairs, `rows` consecutive batch rows times `heads`
// consecutive query heads of one KV head (rows * heads <= kSlots). The
// pairs share their keys' reads: the query heads of a KV head always, the
// rows when they are one sequence's (a prompt chunk).
struct AttentionBlocks {
  int64_t rows = 1, heads = 1;
  int64_t row_groups = 1, head_groups = 1;  // Per KV head: groups of `heads`.
};

// One block of kAttentionSplit warps per (rows, KV head, group of its
// query heads): kSlots (row, query head) pairs (AttentionBlocks). For each
// pair, warp w takes the tiles of 32 keys 32 w, 32 (w + 8), ... up to the
// row's position, in order (AttendTile: keys across lanes), each lane then
// holding kDims of the head's output dimensions (head_dim <= 32 kDims);
// then the warps' states merge in order w = 0, 1, ... (warp 0 always has
// key 0). Pairs whose rows are one sequence's read each key once for all;
// rows of different sequences take their keys one row after another, the
// others' pairs masked out. Either way each pair sees the same operations
// in the same order, whatever the block's shape: a row's result depends on
// its own query and keys only. kType is the cache's row type.
template <int kSlots, int kDims, TensorType kType>
__global__ void __launch_bounds__(kAttentionSplit * kWarp, 2)
    AttentionKernel(const float* q, const int32_t* positions, KvBatch kv, AttentionShape s, int64_t n_rows,
                    AttentionBlocks shape, float* out) {
  __shared__ float split_max[kAttentionSplit], split_sum[kAttentionSplit];
  __shared__ float split_acc[kAttentionSplit][kMaxCudaHeadDim];
  __shared__ __align__(16) float queries[kSlots][kMaxCudaHeadDim];
  const int split = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t group = s.n_head / s.n_head_kv;
  int64_t block = blockIdx.x;
  const int64_t head_group = block % shape.head_groups;
  block /= shape.head_groups;
  const int64_t kvh = block % s.n_head_kv;
  const int64_t t0 = block / s.n_head_kv * shape.rows;
  const int64_t h0 = kvh * group + head_group * shape.heads;
  const int dims = static_cast<int>((s.head_dim + kWarp - 1) / kWarp);
  // Slot n is row t0 + n / heads, query head h0 + n % heads, where both
  // exist (the batch's and the group's ends).
  auto row_of = [&](int n) { return t0 + n / shape.heads; };
  auto head_of = [&](int n) { return h0 + n % shape.heads; };
  auto exists = [&](int n) {
    return n < shape.rows * shape.heads && row_of(n) < n_rows && head_of(n) < (kvh + 1) * group;
  };
  // The queries, zero past head_dim and for slots that do not exist.
  for (int i = threadIdx.x; i < kSlots * kMaxCudaHeadDim; i += blockDim.x) {
    const int n = i / kMaxCudaHeadDim, e = i % kMaxCudaHeadDim;
    queries[n][e] = exists(n) && e < s.head_dim ? q[(row_of(n) * s.n_head + head_of(n)) * s.head_dim + e] : 0.0f;
  }
  // Everything below but the lanes' keys is the same for every thread of
  // the block, so whole warps take each branch and reach each shuffle and
  // barrier together.
  int64_t last[kSlots];
  bool one_sequence = true;
#pragma unroll
  for (int n = 0; n < kSlots; ++n) {
    last[n] = -1;
    if (!exists(n)) continue;
    last[n] = positions[row_of(n)];
    one_sequence = one_sequence && kv.table_start[row_of(n)] == kv.table_start[t0];
  }
  __syncthreads();
  const float* qs[kSlots];
#pragma unroll
  for (int n = 0; n < kSlots; ++n) qs[n] = queries[n];
  SoftmaxStates<kSlots, kDims> st;
  constexpr int64_t kStride = static_cast<int64_t>(kKeyTile) * kAttentionSplit;
  // Each pass takes the pairs of one sequence's table (all of them, or one
  // row's), the others masked out (last -1: they see no keys).
  const int64_t passes = one_sequence ? 1 : min(shape.rows, n_rows - t0);
  for (int64_t pass = 0; pass < passes; ++pass) {
    int64_t mine[kSlots];
    int64_t longest = -1;
#pragma unroll
    for (int n = 0; n < kSlots; ++n) {
      mine[n] = one_sequence || n / shape.heads == pass ? last[n] : -1;
      longest = max(longest, mine[n]);
    }
    for (int64_t base = static_cast<int64_t>(split) * kKeyTile; base <= longest; base += kStride) {
      AttendTile<kType>(kv, t0 + pass, base, s, kvh, lane, dims, qs, mine, st);
    }
  }
  // The warps' states meet in shared memory one pair at a time.
#pragma unroll
  for (int n = 0; n < kSlots; ++n) {
    if (!exists(n)) continue;
    if (lane == 0) {
      split_max[split] = st.max[n];
      split_sum[split] = st.sum[n];
    }
#pragma unroll
    for (int d = 0; d < kDims; ++d) {
      const int64_t e = lane + d * kWarp;
      if (d < dims && e < s.head_dim) split_acc[split][e] = st.acc[n][d];
    }
    __syncthreads();
    if (split == 0) {
      float m = split_max[0];
      for (int w = 1; w < kAttentionSplit; ++w) m = fmaxf(m, split_max[w]);
      float weight[kAttentionSplit], total = 0;
#pragma unroll
      for (int w = 0; w < kAttentionSplit; ++w) {
        weight[w] = expf(split_max[w] - m);  // 0 for a warp without keys.
        total += split_sum[w] * weight[w];
      }
      float* o = out + (row_of(n) * s.n_head + head_of(n)) * s.head_dim;
      for (int d = 0; d < dims; ++d) {
        const int64_t e = lane + d * kWarp;
        if (e >= s.head_dim) continue;
        float a = 0;
#pragma unroll
        for (int w = 0; w < kAttentionSplit; ++w) a += split_acc[w][e] * weight[w];
        o[e] = a / total;
      }
    }
    __syncthreads();
  }
}

// Attention's blocks: a KV head's query heads together (up to 4: what
// 128 registers a thread hold, two blocks an SM), and where a sequence
// has a prompt chunk's rows (KvBatch's hint), as many rows as fill the
// slots left. Decode rows, each of its own sequence, one to a block. The
// same results any way (AttentionKernel).
template <int kDims>
void LaunchWithDims(CudaQueue& queue, const float* q, int64_t n_rows, const int32_t* positions, const KvBatch& kv,
                    const AttentionShape& shape, float* out) {
  constexpr int64_t kMaxSlots = 4;
  const int64_t group = shape.n_head / shape.n_head_kv;
  AttentionBlocks blocks;
  // A group of more than kMaxSlots heads in even blocks (5: 3 + 2).
  blocks.heads = (group + (group + kMaxSlots - 1) / kMaxSlots - 1) / ((group + kMaxSlots - 1) / kMaxSlots);
  blocks.rows = kv.rows_per_sequence >= 8 ? std::max<int64_t>(1, kMaxSlots / blocks.heads) : 1;
  blocks.row_groups = (n_rows + blocks.rows - 1) / blocks.rows;
  blocks.head_groups = (group + blocks.heads - 1) / blocks.heads;
  const int64_t slots = blocks.rows * blocks.heads;
  const int64_t grid = blocks.row_groups * shape.n_head_kv * blocks.head_groups;
  SWIFTLET_CHECK(grid < (int64_t{1} << 31));  // gridDim.x's limit.
  // The hint is the host's (it chose the blocks): not an argument whose
  // every change would update a graph's node.
  KvBatch batch = kv;
  batch.rows_per_sequence = 0;
  auto launch = [&](auto kernel) {
    queue.Launch("Attention", kernel, static_cast<unsigned>(grid), kAttentionSplit * kWarp, 0, q, positions, batch,
                 shape, n_rows, blocks, out);
  };
  // The fewest slots that hold the block's pairs: each slot costs every
  // lane a dot product per key.
  auto with_slots = [&]<int kSlots>() {
    switch (kv.layer.type) {
      case TensorType::kF16: launch(AttentionKernel<kSlots, kDims, TensorType::kF16>); break;
      case TensorType::kQ8_0: launch(AttentionKernel<kSlots, kDims, TensorType::kQ8_0>); break;
      default:
        SWIFTLET_CHECK(kv.layer.type == TensorType::kF32);  // kv/kv_row.h's types.
        launch(AttentionKernel<kSlots, kDims, TensorType::kF32>);
    }
  };
  if (slots <= 1) {
    with_slots.template operator()<1>();
  } else if (slots <= 2) {
    with_slots.template operator()<2>();
  } else if (slots <= 4) {
    with_slots.template operator()<4>();
  } else {
    SWIFTLET_CHECK(false);  // kMaxSlots holds every block's pairs.
  }
}

}  // namespace

void LaunchAttention(CudaQueue& queue, const float* q, int64_t n_rows, const int32_t* positions, const KvBatch& kv,
                     const AttentionShape& shape, float* out) {
  SWIFTLET_CHECK(shape.head_dim <= kMaxCudaHeadDim);
  if (n_rows == 0) return;
  // The fewest output dimensions a lane holds (head_dim <= 32 kDims).
  const int64_t dims = (shape.head_dim + kWarp - 1) / kWarp;
  if (dims <= 2) {
    LaunchWithDims<2>(queue, q, n_rows, positions, kv, shape, out);
  } else if (dims <= 4) {
    LaunchWithDims<4>(queue, q, n_rows, positions, kv, shape, out);
  } else {
    LaunchWithDims<8>(queue, q, n_rows, positions, kv, shape, out);
  }
}

}  // namespace swiftlet::cuda_attention
