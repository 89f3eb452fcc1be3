// The CUDA backend (cuda_backend.h). Everything runs on one stream per
// backend (cuda_queue.h), shared with the buffers it made, so every op,
// copy and buffer operation is ordered after the ones called before it, as
// backend.h promises; Download waits for them. Ops record their launches,
// which run when a copy must follow them: a run seen before as one CUDA
// graph (launch_graphs.h).
//
// Matmuls: quantized weights on the tensor cores (mma_q8.h), or with dp4a
// where there are none, and the float types with float slices, one warp
// to each (output row, tile of 8 batch rows), its lanes decoding whole
// slices of the weight row with wide loads (weight_slices.h); all checked
// on the CPU as far as a CPU can. Attention gives 8 warps to each (batch
// row, head); RMSNorm one block to each row. Each reduces in a fixed order
// that does not depend on the batch, so a row's result is the same in any
// batch.
#include "kernels/cuda/cuda_backend.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>

#include "core/check.h"
#include "core/str_cat.h"
#include "kernels/cuda/cuda_queue.h"
#include "kernels/cuda/mma_q8.h"
#include "kernels/cuda/weight_slices.h"
#include "kernels/quant_blocks.h"

namespace swiftlet {
namespace {

constexpr int kWarp = 32;

int Blocks(int64_t n, int threads) { return static_cast<int>((n + threads - 1) / threads); }

__device__ float Half(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
__device__ float Bf16(uint16_t bits) { return __uint_as_float(static_cast<uint32_t>(bits) << 16); }

__device__ float WarpSum(float v) {
  // A butterfly: every lane ends with the same sum, in the same order
  // whatever the batch.
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// A lane's element x of a block of 32 quantized as QuantizeRowQ8_0
// quantizes it (d = max|x| / 127, q = round(x · (1 / d)) within ±127, the
// same IEEE operations); every lane of the warp joins, and all get d's F16
// bits.
__device__ int8_t QuantizeLaneQ8(float x, uint16_t* d_bits) {
  // From 0, as the CPU's max: NaN never becomes the maximum (fmaxf drops
  // it), so a block of NaN gets d = 0 there too.
  float amax = fmaxf(0.0f, fabsf(x));
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  }
  const float d = amax / 127.0f;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  *d_bits = __half_as_ushort(__float2half_rn(d));
  return static_cast<int8_t>(fminf(fmaxf(rintf(x * id), -127.0f), 127.0f));
}

// Element i of a row of kType (F32, F16, BF16 or Q8_0), one at a time:
// attention's cache rows, and float weights whose rows are not a whole
// number of slices.
template <TensorType kType>
__device__ float ElementOf(const uint8_t* row, int64_t i) {
  if constexpr (kType == TensorType::kF16) {
    return Half(reinterpret_cast<const uint16_t*>(row)[i]);
  } else if constexpr (kType == TensorType::kBF16) {
    return Bf16(reinterpret_cast<const uint16_t*>(row)[i]);
  } else if constexpr (kType == TensorType::kQ8_0) {
    const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[i / BlockQ8_0::kElems];
    return Half(b.d) * static_cast<float>(b.qs[i % BlockQ8_0::kElems]);
  } else {
    static_assert(kType == TensorType::kF32);
    return reinterpret_cast<const float*>(row)[i];
  }
}

// The same for a type known only at run time.
__device__ float Element(TensorType type, const uint8_t* row, int64_t i) {
  switch (type) {
    case TensorType::kF16: return ElementOf<TensorType::kF16>(row, i);
    case TensorType::kBF16: return ElementOf<TensorType::kBF16>(row, i);
    case TensorType::kQ8_0: return ElementOf<TensorType::kQ8_0>(row, i);
    default: return ElementOf<TensorType::kF32>(row, i);
  }
}

using cuda_slices::kRowsPerWarp;

// The warp of (output row o, tile of kRowsPerWarp batch rows from t0), or
// false past the last one. Every lane of a warp gets the same answer, so
// whole warps leave together and the rest can shuffle.
struct MatMulWarp {
  int64_t o, t0;
  int rows, lane;
};
__device__ bool FindMatMulWarp(int64_t n_out, int64_t n_rows, MatMulWarp* m) {
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int64_t tiles = (n_rows + kRowsPerWarp - 1) / kRowsPerWarp;
  if (warp >= n_out * tiles) return false;
  // A weight row's tiles go to neighbouring warps, which read it at about
  // the same time: HBM delivers it once, L2 the other times.
  m->o = warp / tiles;
  m->t0 = warp % tiles * kRowsPerWarp;
  m->rows = static_cast<int>(min(static_cast<int64_t>(kRowsPerWarp), n_rows - m->t0));
  m->lane = threadIdx.x % kWarp;
  return true;
}

// Sums each lane's share through the same butterfly and stores the tile's
// results: row r's value does not depend on the tile it shares.
__device__ void StoreMatMulTile(const MatMulWarp& m, const float* sum, int64_t n_out, float* y) {
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const float total = WarpSum(sum[r]);  // Every lane joins the shuffle.
    if (r < m.rows && m.lane == 0) y[(m.t0 + r) * n_out + m.o] = total;
  }
}

// y[t * n_out + o] = W[o] · x[t]: one warp per (o, tile of kRowsPerWarp
// batch rows), each lane decoding whole slices of the row with wide loads
// (weight_slices.h) and using each decoded weight for every row of the tile.
template <typename Slice>
__global__ void MatMulKernel(const uint8_t* w, size_t row_bytes, int64_t n_in, int64_t n_out, const float* x,
                             int64_t n_rows, float* y) {
  MatMulWarp m;
  if (!FindMatMulWarp(n_out, n_rows, &m)) return;
  float sum[kRowsPerWarp] = {};
  cuda_slices::AccumulateLane<Slice>(w + static_cast<size_t>(m.o) * row_bytes, n_in / Slice::kElems,
                                     x + m.t0 * n_in, n_in, m.rows, m.lane, sum);
  StoreMatMulTile(m, sum, n_out, y);
}

// MatMulKernel for quantized weights against activations quantized by
// QuantizeActivationsKernel (weight_slices.h's kActivationBlock): integer
// dot products of each slice (dp4a), scaled once per slice.
template <typename Slice>
__global__ void MatMulQ8Kernel(const uint8_t* w, size_t row_bytes, int64_t n_in, int64_t n_out, const int8_t* q,
                               const float* d, int64_t n_rows, float* y) {
  MatMulWarp m;
  if (!FindMatMulWarp(n_out, n_rows, &m)) return;
  float sum[kRowsPerWarp] = {};
  cuda_slices::AccumulateLaneQ8<Slice>(w + static_cast<size_t>(m.o) * row_bytes, n_in / Slice::kElems,
                                       q + m.t0 * n_in, d + m.t0 * (n_in / cuda_slices::kActivationBlock), n_in,
                                       m.rows, m.lane, sum);
  StoreMatMulTile(m, sum, n_out, y);
}

// D += A B on the tensor cores for one k-tile: the m16n8k16 integer mma of
// mma_q8.h (sm_80 and later; MatMuls uses it only there).
__device__ void Mma(int32_t c[4], uint32_t a_row_g, uint32_t a_row_g8, uint32_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
               : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
               : "r"(a_row_g), "r"(a_row_g8), "r"(b));
#else
  __trap();
#endif
}

// Quantized weights (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) against quantized
// activations on the tensor cores (mma_q8.h): one block of kSplit warps per (kMT tiles of 16 weight rows,
// kNT tiles of 8 batch rows); warp w takes the rows' blocks w, w + kSplit,
// ... and the warps' partial sums are added in order: mma_q8.h's reduction
// order, so an output is the same bits whatever kMT, kNT and the rows
// beside it. More tiles a block read the activations fewer times (each
// block reads its batch rows whole); fewer give decode more blocks.
template <typename Slice, int kMT, int kNT>
__global__ void __launch_bounds__(cuda_mma::kSplit * kWarp)
    MmaQ8Kernel(const uint8_t* w, size_t row_bytes, int64_t n_in, int64_t n_out, const int8_t* q, const float* d,
                const float* sums, int64_t n_rows, float* y) {
  using namespace cuda_mma;
  using Fragment = FragmentA<Slice>;
  __shared__ float partial[kSplit][kNT][kWarp][4];
  const int split = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int g = lane / 4, t = lane % 4;
  const int64_t o0 = static_cast<int64_t>(blockIdx.x) * kTileRows * kMT;
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTileCols * kNT;
  const int64_t nb = n_in / cuda_slices::kActivationBlock;
  // Rows past the end read the last row; their sums are not stored.
  const uint8_t* rows[kMT][2];
  for (int i = 0; i < kMT; ++i) {
    for (int r = 0; r < 2; ++r) {
      rows[i][r] = w + static_cast<size_t>(min(o0 + i * kTileRows + g + 8 * r, n_out - 1)) * row_bytes;
    }
  }
  // Tiles with batch rows in them: the same for the whole block, so every
  // lane of a warp reaches each mma.
  const int tiles = static_cast<int>(min(static_cast<int64_t>(kNT), (n_rows - t0 + kTileCols - 1) / kTileCols));
  float p[kMT][kNT][4] = {};
  // Decode's blocks are few and their work small: more blocks of 32 in
  // flight per lane keep more bytes coming from HBM (two for the K quants,
  // whose scales take the registers).
  constexpr int kUnroll = kMT == 1 && kNT == 1 && Fragment::kSubBlocks == 1 ? 4 : 2;
#pragma unroll kUnroll
  for (int64_t b = split; b < nb; b += kSplit) {
    uint32_t bf[kNT][2] = {};
    float dx[kNT][2] = {}, sx[kNT][2] = {};
    for (int j = 0; j < kNT; ++j) {
      if (j >= tiles) break;
      const int64_t n = t0 + j * kTileCols + g;
      if (n < n_rows) {
        const int8_t* xq = q + n * n_in + b * cuda_slices::kActivationBlock;
        bf[j][0] = FragmentB(xq, t, 0);
        bf[j][1] = FragmentB(xq, t, 1);
      }
      for (int col = 0; col < 2; ++col) {
        const int64_t r = t0 + j * kTileCols + 2 * t + col;
        if (r < n_rows) {
          dx[j][col] = d[r * nb + b];
          if constexpr (Fragment::kMins) sx[j][col] = sums[r * nb + b];
        }
      }
    }
    for (int i = 0; i < kMT; ++i) {
      int sub;
      const uint8_t* block[2] = {BlockOfRow<Slice>(rows[i][0], b, &sub), BlockOfRow<Slice>(rows[i][1], b, &sub)};
      uint32_t a[2][2];
      RowScales ws[2];
      Fragment::Load(block, sub, t, a, ws);
      for (int j = 0; j < kNT; ++j) {
        if (j >= tiles) break;
        int32_t c0[4] = {0, 0, 0, 0}, c1[4] = {0, 0, 0, 0};
        Mma(c0, a[0][0], a[0][1], bf[j][0]);
        Mma(c1, a[1][0], a[1][1], bf[j][1]);
        AccumulateBlock<Slice>(c0, c1, ws, dx[j], sx[j], p[i][j]);
      }
    }
  }
  // The warps' partials meet in shared memory one row tile at a time;
  // warp 0 adds them in order.
  for (int i = 0; i < kMT; ++i) {
    for (int j = 0; j < kNT; ++j) {
      for (int e = 0; e < 4; ++e) partial[split][j][lane][e] = p[i][j][e];
    }
    __syncthreads();
    if (split == 0) {
      for (int j = 0; j < tiles; ++j) {
        for (int e = 0; e < 4; ++e) {
          float sum = partial[0][j][lane][e];
          for (int s = 1; s < kSplit; ++s) sum += partial[s][j][lane][e];
          const int64_t o = o0 + i * kTileRows + g + 8 * (e / 2), r = t0 + j * kTileCols + 2 * t + e % 2;
          if (o < n_out && r < n_rows) y[r * n_out + o] = sum;
        }
      }
    }
    __syncthreads();
  }
}

// One warp per block of 32 activations (rows of n_in, a multiple of 32, are
// contiguous): quants to q, scales as floats to d, and the sums of the
// quants (exact, as floats) to sums, for the K quants' mins (mma_q8.h).
__global__ void QuantizeActivationsKernel(const float* x, int64_t n_blocks, int8_t* q, float* d, float* sums) {
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (warp >= n_blocks) return;
  const int64_t i = warp * kWarp + lane;
  uint16_t d_bits;
  const int8_t quant = QuantizeLaneQ8(x[i], &d_bits);
  q[i] = quant;
  int sum = quant;
  for (int offset = kWarp / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) {
    d[warp] = __half2float(__ushort_as_half(d_bits));
    sums[warp] = static_cast<float>(sum);
  }
}

// The same product one element per lane per step, for float rows that are
// not a whole number of 16-byte slices.
__global__ void MatMulElementKernel(TensorType type, const uint8_t* w, size_t row_bytes, int64_t n_in,
                                    int64_t n_out, const float* x, int64_t n_rows, float* y) {
  MatMulWarp m;
  if (!FindMatMulWarp(n_out, n_rows, &m)) return;
  const uint8_t* row = w + static_cast<size_t>(m.o) * row_bytes;
  float sum[kRowsPerWarp] = {};
  for (int64_t i = m.lane; i < n_in; i += kWarp) {
    const float wi = Element(type, row, i);
    for (int r = 0; r < kRowsPerWarp; ++r) {
      if (r < m.rows) sum[r] += wi * x[(m.t0 + r) * n_in + i];
    }
  }
  StoreMatMulTile(m, sum, n_out, y);
}

// One thread per (row, block, slice) of the rows asked for.
template <typename Slice>
__global__ void GetRowsKernel(const uint8_t* table, size_t row_bytes, int64_t n_in, const int32_t* ids, int64_t n,
                              float* out) {
  const int64_t per_row = n_in / Slice::kElems * Slice::kSlices;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * per_row) return;
  const int64_t t = i / per_row, b = i % per_row / Slice::kSlices;
  const int s = static_cast<int>(i % Slice::kSlices);
  float w[Slice::kWeights];
  Slice::Decode(table + static_cast<size_t>(ids[t]) * row_bytes + static_cast<size_t>(b) * Slice::kBytes, s, w);
  float* o = out + t * n_in + b * Slice::kElems;
  for (int k = 0; k < Slice::kWeights; ++k) o[Slice::Index(s, k)] = w[k];
}

__global__ void GetRowsElementKernel(TensorType type, const uint8_t* table, size_t row_bytes, int64_t n_in,
                                     const int32_t* ids, int64_t n, float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * n_in) return;
  const int64_t t = i / n_in, e = i % n_in;
  out[i] = Element(type, table + static_cast<size_t>(ids[t]) * row_bytes, e);
}

// One block per row: the sum of squares in a fixed tree order.
__global__ void RmsNormKernel(const float* x, const float* weight, int64_t n, float eps, float* y) {
  extern __shared__ float partial[];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * n;
  float* out = y + static_cast<int64_t>(blockIdx.x) * n;
  float ss = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) ss += row[i] * row[i];
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float scale = 1.0f / sqrtf(partial[0] / static_cast<float>(n) + eps);
  // x and y may be the same rows: every thread has read its elements'
  // squares before the barrier above, and each writes only the elements it
  // reads here.
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = row[i] * scale * weight[i];
}

// One thread per (row, head, rotated pair); angles in double, as the CPU
// computes them.
__global__ void RopeKernel(float* x, int64_t n_rows, const int32_t* positions, RopeShape s) {
  const int64_t half = s.rope_dim / 2;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_rows * s.n_head * half) return;
  const int64_t t = i / (s.n_head * half), h = (i / half) % s.n_head, p = i % half;
  double theta = static_cast<double>(positions[t]) * s.position_scale *
                 pow(static_cast<double>(s.freq_base), -2.0 * static_cast<double>(p) / static_cast<double>(s.rope_dim));
  if (s.freq_factors != nullptr) theta /= s.freq_factors[p];
  const float c = static_cast<float>(cos(theta)), sn = static_cast<float>(sin(theta));
  float* head = x + (t * s.n_head + h) * s.head_dim;
  const int64_t a = s.neox ? p : 2 * p, b = s.neox ? p + half : 2 * p + 1;
  const float xa = head[a], xb = head[b];
  head[a] = xa * c - xb * sn;
  head[b] = xa * sn + xb * c;
}

__device__ uint8_t* KvRow(const KvBatch& kv, int64_t t, int64_t j, size_t offset) {
  const KvLayer& l = kv.layer;
  const int32_t block = kv.tables[kv.table_start[t] + j / l.block_rows];
  return l.base + static_cast<size_t>(block) * l.block_stride + offset +
         static_cast<size_t>(j % l.block_rows) * l.row_bytes;
}

// F32 and F16 rows: one thread per element.
__global__ void StoreKvFloatKernel(const float* k, const float* v, int64_t n_rows, const int32_t* positions,
                                   KvBatch kv, int64_t kv_dim) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_rows * kv_dim) return;
  const int64_t t = i / kv_dim, e = i % kv_dim;
  uint8_t* krow = KvRow(kv, t, positions[t], kv.layer.k_offset);
  uint8_t* vrow = KvRow(kv, t, positions[t], kv.layer.v_offset);
  if (kv.layer.type == TensorType::kF16) {
    reinterpret_cast<__half*>(krow)[e] = __float2half_rn(k[i]);
    reinterpret_cast<__half*>(vrow)[e] = __float2half_rn(v[i]);
  } else {
    reinterpret_cast<float*>(krow)[e] = k[i];
    reinterpret_cast<float*>(vrow)[e] = v[i];
  }
}

// Q8_0 rows: one warp per (row, block of 32), K and V alike, quantized as
// QuantizeRowQ8_0 does (scale amax / 127, round to nearest).
__global__ void StoreKvQ8Kernel(const float* k, const float* v, int64_t n_rows, const int32_t* positions,
                                KvBatch kv, int64_t kv_dim) {
  const int64_t blocks = kv_dim / BlockQ8_0::kElems;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (warp >= n_rows * blocks * 2) return;
  const bool value = warp % 2 == 1;
  const int64_t t = warp / 2 / blocks, b = warp / 2 % blocks;
  const float x = (value ? v : k)[t * kv_dim + b * BlockQ8_0::kElems + lane];
  uint16_t d;
  const int8_t q = QuantizeLaneQ8(x, &d);
  BlockQ8_0* row = reinterpret_cast<BlockQ8_0*>(
      KvRow(kv, t, positions[t], value ? kv.layer.v_offset : kv.layer.k_offset));
  row[b].qs[lane] = q;
  if (lane == 0) row[b].d = d;
}

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

__global__ void SiluMulKernel(float* gate, const float* up, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  gate[i] = g / (1.0f + expf(-g)) * up[i];
}

__global__ void AddKernel(float* y, const float* x, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

__global__ void AddBiasKernel(float* y, const float* bias, int64_t n, int64_t n_rows) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n * n_rows) y[i] += bias[i % n];
}

__global__ void GatherRowsKernel(const float* x, int64_t n, const int32_t* rows, int64_t count, float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n * count) out[i] = x[static_cast<int64_t>(rows[i / n]) * n + i % n];
}

// Every thread reads 16-byte words in a grid-stride loop; the XOR of what
// it read goes to `sink` only when it is a value no buffer holds (never), so
// the loads cannot be dropped and nothing is written.
__global__ void ReadKernel(const uint4* data, int64_t n, uint32_t impossible, uint32_t* sink) {
  uint32_t x = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint4 v = data[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == impossible) *sink = x;
}

// Memory on the GPU, freed once the work asked of its queue before is done.
class CudaBuffer final : public DeviceBuffer {
 public:
  CudaBuffer(std::shared_ptr<CudaQueue> queue, uint8_t* data, size_t bytes)
      : queue_(std::move(queue)), data_(data), bytes_(bytes) {}
  ~CudaBuffer() override {
    queue_->SynchronizeQuietly();
    cudaFree(data_);
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  uint8_t* data() override { return data_; }
  size_t bytes() const override { return bytes_; }
  void CopyWithin(size_t dst, size_t src, size_t bytes) override {
    SWIFTLET_CHECK(dst + bytes <= bytes_ && src + bytes <= bytes_);
    queue_->CopyWithin(data_ + dst, data_ + src, bytes);
  }
  void Zero(size_t offset, size_t bytes) override {
    SWIFTLET_CHECK(offset + bytes <= bytes_);
    queue_->Zero(data_ + offset, bytes);
  }

 private:
  std::shared_ptr<CudaQueue> queue_;
  uint8_t* data_;
  size_t bytes_;
};

class CudaWeight final : public ResidentWeight {
 public:
  CudaWeight(std::unique_ptr<DeviceBuffer> memory, const WeightView& view)
      : memory_(std::move(memory)), view_(view) {}
  const WeightView& view() const override { return view_; }
  size_t bytes() const override { return memory_->bytes(); }

 private:
  std::unique_ptr<DeviceBuffer> memory_;
  WeightView view_;
};

// Whether the sliced kernels take `w`: a type with a slice, rows a whole
// number of its blocks (always, for the quantized types).
bool Sliced(const WeightView& w) {
  bool whole = false;
  cuda_slices::WithSlice(w.type, [&](auto slice) { whole = w.n_in % decltype(slice)::kElems == 0; });
  return whole;
}

class CudaBackend final : public Backend {
 public:
  // tensor_cores: the GPU runs the integer mma (compute capability 8.0 and
  // later); without it the quantized types take the dp4a kernel.
  CudaBackend(int device, bool tensor_cores, cuda_graphs::GraphOptions graphs)
      : device_(device), tensor_cores_(tensor_cores), queue_(std::make_shared<CudaQueue>(device, graphs)) {}
  // Its work is done once it is gone (backend.h): a model's weights are
  // uploaded through a backend of their own, and read on the forward
  // context's stream.
  ~CudaBackend() override { queue_->SynchronizeQuietly(); }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::unique_ptr<DeviceBuffer> Allocate(size_t bytes) override {
    CheckCuda(cudaSetDevice(device_), "select the device");
    void* p = nullptr;
    if (cudaMalloc(&p, std::max<size_t>(bytes, 1)) != cudaSuccess) {
      cudaGetLastError();  // Clear the sticky-free allocation error.
      return nullptr;
    }
    return std::make_unique<CudaBuffer>(queue_, static_cast<uint8_t*>(p), bytes);
  }
  bool SharesHostMemory() const override { return false; }
  cuda_graphs::GraphStats graph_stats() { return queue_->stats(); }
  void Upload(void* dst, const void* host_src, size_t bytes) override { queue_->CopyToDevice(dst, host_src, bytes); }
  void Flush() override { queue_->Flush(); }
  void Download(void* host_dst, const void* src, size_t bytes) override { queue_->CopyToHost(host_dst, src, bytes); }

  absl::StatusOr<std::unique_ptr<ResidentWeight>> PrepareWeight(const WeightView& w, WeightUse,
                                                                int) override {
    if (!cuda_slices::WithSlice(w.type, [](auto) {})) {
      return absl::UnimplementedError(
          StrCat("the CUDA backend does not compute with ", NameOf(w.type), " weights yet"));
    }
    SWIFTLET_CHECK(w.layout == WeightLayout::kRows);
    // Rows the slices do not take are read element by element, which only
    // the float types can be.
    SWIFTLET_CHECK(Sliced(w) || w.type == TensorType::kF32 || w.type == TensorType::kF16 ||
                   w.type == TensorType::kBF16);
    const size_t bytes = static_cast<size_t>(w.n_out) * w.row_bytes;
    std::unique_ptr<DeviceBuffer> memory = Allocate(bytes);
    if (memory == nullptr) {
      return absl::ResourceExhaustedError(StrCat("the GPU has no room for a weight of ", bytes, " bytes"));
    }
    Upload(memory->data(), w.data, bytes);
    WeightView view = w;
    view.data = memory->data();
    view.device = Device::kCuda;
    return std::unique_ptr<ResidentWeight>(std::make_unique<CudaWeight>(std::move(memory), view));
  }

  void MatMul(const WeightView& w, const float* x, int64_t n_rows, float* y) override {
    const MatMulJob job{w, y};
    MatMuls({&job, 1}, x, n_rows);
  }

  // x is quantized once for all the jobs with quantized weights, in as many
  // rows at a time as the scratch memory holds: rows are independent, so
  // a smaller chunk changes no result.
  void MatMuls(std::span<const MatMulJob> jobs, const float* x, int64_t n_rows) override {
    if (n_rows == 0 || jobs.empty()) return;
    const int64_t n_in = jobs[0].w.n_in;
    bool integer = false;
    for (const MatMulJob& job : jobs) {
      SWIFTLET_CHECK(job.w.device == Device::kCuda && job.w.n_in == n_in);
      integer = integer || IntegerDot(job.w);
    }
    int64_t chunk = n_rows;
    while (integer && !EnsureScratch(ScratchBytes(chunk, n_in)) && chunk > 1) chunk = (chunk + 1) / 2;
    // The GPU has no room for one row's quants.
    SWIFTLET_CHECK(!integer || (activations_ != nullptr && activations_->bytes() >= ScratchBytes(chunk, n_in)));
    for (int64_t first = 0; first < n_rows; first += chunk) {
      const int64_t rows = std::min(chunk, n_rows - first);
      const float* xs = x + first * n_in;
      const QuantizedActivations* xq = integer ? Quantize(xs, rows, n_in) : nullptr;
      for (const MatMulJob& job : jobs) Launch(job.w, xs, xq, rows, job.y + first * job.w.n_out);
    }
  }

  void RmsNorm(const float* x, const float* weight, int64_t n, int64_t n_rows, float eps, float* y) override {
    if (n_rows == 0) return;
    constexpr int kThreads = 256;  // A power of two: the tree sum halves it.
    queue_->Launch("RmsNorm", RmsNormKernel, static_cast<unsigned>(n_rows), kThreads, kThreads * sizeof(float), x, weight, n, eps, y);
  }

  void Rope(float* x, int64_t n_rows, const int32_t* positions, const RopeShape& shape) override {
    const int64_t n = n_rows * shape.n_head * (shape.rope_dim / 2);
    if (n == 0) return;
    queue_->Launch("Rope", RopeKernel, Blocks(n, 256), 256, 0, x, n_rows, positions, shape);
  }

  void StoreKv(const float* k, const float* v, int64_t n_rows, const int32_t* positions, const KvBatch& kv,
               int64_t kv_dim) override {
    if (n_rows == 0) return;
    if (kv.layer.type == TensorType::kQ8_0) {
      const int64_t threads = n_rows * (kv_dim / BlockQ8_0::kElems) * 2 * kWarp;
      queue_->Launch("StoreKv", StoreKvQ8Kernel, Blocks(threads, 256), 256, 0, k, v, n_rows, positions, kv, kv_dim);
    } else {
      queue_->Launch("StoreKv", StoreKvFloatKernel, Blocks(n_rows * kv_dim, 256), 256, 0, k, v, n_rows, positions, kv, kv_dim);
    }
  }

  void Attention(const float* q, int64_t n_rows, const int32_t* positions, const KvBatch& kv,
                 const AttentionShape& shape, float* out) override {
    SWIFTLET_CHECK(shape.head_dim <= kMaxCudaHeadDim);
    if (n_rows == 0) return;
    const int64_t dims = (shape.head_dim + kWarp - 1) / kWarp;
    if (dims <= 2) {
      LaunchAttention<2>(q, n_rows, positions, kv, shape, out);
    } else if (dims <= 4) {
      LaunchAttention<4>(q, n_rows, positions, kv, shape, out);
    } else {
      LaunchAttention<8>(q, n_rows, positions, kv, shape, out);
    }
  }

  void SiluMul(float* gate, const float* up, int64_t n) override {
    if (n == 0) return;
    queue_->Launch("SiluMul", SiluMulKernel, Blocks(n, 256), 256, 0, gate, up, n);
  }

  void Add(float* y, const float* x, int64_t n) override {
    if (n == 0) return;
    queue_->Launch("Add", AddKernel, Blocks(n, 256), 256, 0, y, x, n);
  }

  void AddBias(float* y, const float* bias, int64_t n, int64_t n_rows) override {
    if (n * n_rows == 0) return;
    queue_->Launch("AddBias", AddBiasKernel, Blocks(n * n_rows, 256), 256, 0, y, bias, n, n_rows);
  }

  void GatherRows(const float* x, int64_t n, const int32_t* rows, int64_t count, float* out) override {
    if (n * count == 0) return;
    queue_->Launch("GatherRows", GatherRowsKernel, Blocks(n * count, 256), 256, 0, x, n, rows, count, out);
  }

  void GetRows(const WeightView& table, const int32_t* ids, int64_t n, float* out) override {
    SWIFTLET_CHECK(table.device == Device::kCuda);
    if (n == 0) return;
    if (Sliced(table)) {
      cuda_slices::WithSlice(table.type, [&](auto slice) {
        using S = decltype(slice);
        const int64_t threads = n * (table.n_in / S::kElems) * S::kSlices;
        queue_->Launch("GetRows", GetRowsKernel<S>, Blocks(threads, 256), 256, 0, table.data, table.row_bytes, table.n_in, ids, n, out);
      });
    } else {
      queue_->Launch("GetRows", GetRowsElementKernel, Blocks(n * table.n_in, 256), 256, 0, table.type, table.data, table.row_bytes, table.n_in, ids, n, out);
    }
  }

 private:
  struct QuantizedActivations {
    const int8_t* q;
    const float* d;
    const float* sums;
  };

  // Whether `w` takes the integer kernel: quantized weights (whose rows are
  // whole blocks, so whole activation blocks of 32).
  static bool IntegerDot(const WeightView& w) {
    bool integer = false;
    cuda_slices::WithSlice(w.type, [&](auto slice) { integer = decltype(slice)::kIntegerDot; });
    return integer && w.n_in % cuda_slices::kActivationBlock == 0;
  }

  // Scratch bytes for n_rows rows of quantized x: quants, then (at a
  // 256-byte boundary) a float scale per block of 32, then its quants' sum.
  static size_t ScratchBytes(int64_t n_rows, int64_t n_in) {
    const size_t n = static_cast<size_t>(n_rows * n_in);
    return (n + 255) / 256 * 256 + 2 * (n / cuda_slices::kActivationBlock) * sizeof(float);
  }

  // Whether the scratch holds `bytes`, growing it by half again when it
  // must (or to exactly `bytes` when that much more does not fit). When
  // neither fits, the scratch it had stays, for fewer rows at a time.
  bool EnsureScratch(size_t bytes) {
    if (activations_ != nullptr && activations_->bytes() >= bytes) return true;
    const size_t grown = activations_ == nullptr ? bytes : std::max(bytes, activations_->bytes() / 2 * 3);
    std::unique_ptr<DeviceBuffer> larger = Allocate(grown);
    if (larger == nullptr && grown > bytes) larger = Allocate(bytes);
    if (larger == nullptr) return false;
    activations_ = std::move(larger);  // The old one is freed once the launches reading it are done.
    return true;
  }

  // x (n_rows rows of n_in) quantized into the scratch, which holds them.
  const QuantizedActivations* Quantize(const float* x, int64_t n_rows, int64_t n_in) {
    const int64_t blocks = n_rows * n_in / cuda_slices::kActivationBlock;
    const size_t scales_at = (static_cast<size_t>(n_rows * n_in) + 255) / 256 * 256;
    SWIFTLET_CHECK(activations_ != nullptr && activations_->bytes() >= ScratchBytes(n_rows, n_in));
    int8_t* q = reinterpret_cast<int8_t*>(activations_->data());
    float* d = reinterpret_cast<float*>(activations_->data() + scales_at);
    float* sums = d + blocks;
    quantized_ = {q, d, sums};
    queue_->Launch("quantize activations", QuantizeActivationsKernel, Blocks(blocks * kWarp, 256), 256, 0, x, blocks, q,
                   d, sums);
    return &quantized_;
  }

  // Attention's blocks: a KV head's query heads together (up to 4: what
  // 128 registers a thread hold, two blocks an SM), and where a sequence
  // has a prompt chunk's rows (KvBatch's hint), as many rows as fill the
  // slots left. Decode rows, each of its own
  // sequence, one to a block. The same results any way (AttentionKernel).
  template <int kDims>
  void LaunchAttention(const float* q, int64_t n_rows, const int32_t* positions, const KvBatch& kv,
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
      queue_->Launch("Attention", kernel, static_cast<unsigned>(grid), kAttentionSplit * kWarp, 0, q, positions,
                     batch, shape, n_rows, blocks, out);
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

  template <typename Slice, int kMT, int kNT>
  void LaunchMma(const WeightView& w, const QuantizedActivations* xq, int64_t n_rows, float* y) {
    const int64_t rows = cuda_mma::kTileRows * kMT, cols = cuda_mma::kTileCols * kNT;
    SWIFTLET_CHECK(w.n_out > 0 && (n_rows + cols - 1) / cols <= 65535);  // gridDim.y's limit.
    const dim3 grid(static_cast<unsigned>((w.n_out + rows - 1) / rows), static_cast<unsigned>((n_rows + cols - 1) / cols));
    queue_->Launch("MatMul (tensor cores)", MmaQ8Kernel<Slice, kMT, kNT>, grid, cuda_mma::kSplit * kWarp, 0, w.data, w.row_bytes, w.n_in, w.n_out, xq->q, xq->d, xq->sums, n_rows, y);
  }

  // One matmul: integer against xq where the weights are quantized and xq
  // is there, sliced floats where rows are whole slices, else element-wise.
  void Launch(const WeightView& w, const float* x, const QuantizedActivations* xq, int64_t n_rows, float* y) {
    constexpr int kThreads = 256;
    const int64_t tiles = (n_rows + kRowsPerWarp - 1) / kRowsPerWarp;
    const int blocks = Blocks(w.n_out * tiles * kWarp, kThreads);
    if (xq != nullptr && cuda_mma::MmaType(w.type) && tensor_cores_) {
      // Decode's few rows: 16 weight rows a block, for as many blocks as can
      // stream the weights; up to 32 batch rows (batched decode): still 16
      // weight rows, a tile of 32 batch rows, so the weights are read once;
      // a prompt: 64 weight rows a block, reading the activations a quarter
      // as often. The same bits every way (mma_q8.h).
      cuda_slices::WithSlice(w.type, [&](auto slice) {
        using S = decltype(slice);
        if constexpr (cuda_mma::FragmentA<S>::kDefined) {
          if (n_rows <= cuda_mma::kTileCols) {
            LaunchMma<S, 1, 1>(w, xq, n_rows, y);
          } else if (n_rows <= 4 * cuda_mma::kTileCols) {
            LaunchMma<S, 1, 4>(w, xq, n_rows, y);
          } else {
            LaunchMma<S, 4, 4>(w, xq, n_rows, y);
          }
        } else {
          SWIFTLET_CHECK(false);  // MmaType and the FragmentA types disagree.
        }
      });
    } else if (Sliced(w)) {
      cuda_slices::WithSlice(w.type, [&](auto slice) {
        using S = decltype(slice);
        if constexpr (S::kIntegerDot) {
          if (xq != nullptr) {
            queue_->Launch("MatMul (dp4a)", MatMulQ8Kernel<S>, blocks, kThreads, 0, w.data, w.row_bytes, w.n_in, w.n_out, xq->q, xq->d, n_rows, y);
            return;
          }
        }
        queue_->Launch("MatMul", MatMulKernel<S>, blocks, kThreads, 0, w.data, w.row_bytes, w.n_in, w.n_out, x, n_rows, y);
      });
    } else {
      queue_->Launch("MatMul", MatMulElementKernel, blocks, kThreads, 0, w.type, w.data, w.row_bytes, w.n_in, w.n_out, x, n_rows, y);
    }
  }

  int device_;
  bool tensor_cores_;
  std::shared_ptr<CudaQueue> queue_;  // Declared before what it must outlive.
  std::unique_ptr<DeviceBuffer> activations_;  // Quantized x: quants, scales, quant sums (ScratchBytes).
  QuantizedActivations quantized_{};
};

}  // namespace

bool CudaBackendBuilt() { return true; }

std::vector<CudaDeviceInfo> ListCudaDevices(std::string* why) {
  std::vector<CudaDeviceInfo> out;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why != nullptr) *why = StrCat("CUDA: ", cudaGetErrorString(e));
    cudaGetLastError();
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    out.push_back({i, p.name, static_cast<uint64_t>(p.totalGlobalMem), p.major, p.minor});
  }
  if (out.empty() && why != nullptr) *why = "CUDA: no GPU found";
  return out;
}

absl::StatusOr<double> MeasureCudaReadBandwidth(int device, uint64_t bytes) {
  SWIFTLET_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, MakeCudaBackend(device));
  std::unique_ptr<DeviceBuffer> buffer = backend->Allocate(bytes);
  std::unique_ptr<DeviceBuffer> sink = backend->Allocate(sizeof(uint32_t));
  if (buffer == nullptr || sink == nullptr) {
    return absl::ResourceExhaustedError(StrCat("no room on the GPU for a ", bytes, "-byte bandwidth buffer"));
  }
  // A pattern whose XOR over any thread's words is never all ones.
  CheckCuda(cudaMemset(buffer->data(), 0x11, bytes), "fill the bandwidth buffer");
  int sms = 0;
  CheckCuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "count SMs");
  const int64_t words = static_cast<int64_t>(bytes / sizeof(uint4));
  cudaEvent_t start, stop;
  CheckCuda(cudaEventCreate(&start), "event");
  CheckCuda(cudaEventCreate(&stop), "event");
  double best = 0;
  for (int pass = 0; pass < 6; ++pass) {  // The first warms up.
    CheckCuda(cudaEventRecord(start), "event");
    ReadKernel<<<sms * 8, 512>>>(reinterpret_cast<const uint4*>(buffer->data()), words, 0xffffffffu,
                                 reinterpret_cast<uint32_t*>(sink->data()));
    CheckCuda(cudaGetLastError(), "bandwidth read");
    CheckCuda(cudaEventRecord(stop), "event");
    CheckCuda(cudaEventSynchronize(stop), "event");
    float ms = 0;
    CheckCuda(cudaEventElapsedTime(&ms, start, stop), "event");
    if (pass > 0 && ms > 0) best = std::max(best, static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

absl::StatusOr<CudaMemory> QueryCudaMemory(int device) {
  std::string why;
  const std::vector<CudaDeviceInfo> devices = ListCudaDevices(&why);
  if (device < 0 || device >= static_cast<int>(devices.size())) {
    return absl::FailedPreconditionError(
        devices.empty() ? why : StrCat("no GPU ", device, ": ", devices.size(), " found"));
  }
  // cudaMemGetInfo answers for the calling thread's current device.
  int current = 0;
  CheckCuda(cudaGetDevice(&current), "current device");
  CheckCuda(cudaSetDevice(device), "select the device");
  size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t e = cudaMemGetInfo(&free_bytes, &total_bytes);
  CheckCuda(cudaSetDevice(current), "select the device");
  if (e != cudaSuccess) {
    cudaGetLastError();
    return absl::UnavailableError(StrCat("CUDA: memory of GPU ", device, ": ", cudaGetErrorString(e)));
  }
  return CudaMemory{free_bytes, total_bytes};
}

CudaGraphCounts CudaGraphCountsOf(Backend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (cuda == nullptr) return {};
  const cuda_graphs::GraphStats s = cuda->graph_stats();
  return {s.eager, s.built, s.replayed, s.updated_nodes};
}

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device) {
  std::string why;
  const std::vector<CudaDeviceInfo> devices = ListCudaDevices(&why);
  if (device < 0 || device >= static_cast<int>(devices.size())) {
    return absl::FailedPreconditionError(
        devices.empty() ? why : StrCat("no GPU ", device, ": ", devices.size(), " found"));
  }
  CheckCuda(cudaSetDevice(device), "select the device");
  // The kernels are built for CMAKE_CUDA_ARCHITECTURES (sm_90 by default);
  // on another GPU the first launch would fail: say so here instead.
  cudaFuncAttributes attributes{};
  if (const cudaError_t e = cudaFuncGetAttributes(&attributes, AddKernel); e != cudaSuccess) {
    cudaGetLastError();
    return absl::FailedPreconditionError(StrCat(
        "GPU ", device, " (", devices[static_cast<size_t>(device)].name, ", compute capability ",
        devices[static_cast<size_t>(device)].compute_major, ".", devices[static_cast<size_t>(device)].compute_minor,
        ") cannot run this build's kernels (", cudaGetErrorString(e), "): rebuild with CMAKE_CUDA_ARCHITECTURES set for it"));
  }
  // SWIFTLET_CUDA_TENSOR_CORES=0 takes the dp4a kernels instead: for
  // comparing the two (scripts/gpu-check.sh), not for production.
  // The mma needs sm_80: both the GPU and the code built for it (a build
  // for older architectures too may run their PTX, where Mma traps).
  cudaFuncAttributes mma{};
  const bool mma_built = cudaFuncGetAttributes(&mma, MmaQ8Kernel<cuda_slices::SliceQ8_0, 1, 1>) == cudaSuccess &&
                         mma.ptxVersion >= 80 && mma.binaryVersion >= 80;
  cudaGetLastError();
  auto off = [](const char* name) {
    const char* knob = std::getenv(name);
    return knob != nullptr && std::string(knob) == "0";
  };
  const bool tensor_cores =
      mma_built && devices[static_cast<size_t>(device)].compute_major >= 8 && !off("SWIFTLET_CUDA_TENSOR_CORES");
  // SWIFTLET_CUDA_GRAPHS=0 issues every launch on its own: for comparing
  // (scripts/gpu-check.sh), and a way out should a driver misbehave.
  cuda_graphs::GraphOptions graphs;
  graphs.enabled = !off("SWIFTLET_CUDA_GRAPHS");
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(device, tensor_cores, graphs));
}

}  // namespace swiftlet
