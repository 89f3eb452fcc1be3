// The matmul kernels (matmul_kernels.h). Each output is summed in a fixed
// order that does not depend on the batch, so a row's result is the same in
// any batch; the tensor-core kernel's order is mma_q8.h's, checked on the
// CPU against the PTX fragment layout (tests/kernels/cuda_mma_q8_test.cc).
#include "kernels/cuda/matmul_kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/check.h"
#include "kernels/cuda/cuda_queue.h"
#include "kernels/cuda/device_math.h"
#include "kernels/cuda/mma_q8.h"
#include "kernels/cuda/weight_slices.h"

namespace swiftlet::cuda_matmul {
namespace {

using cuda_device::Blocks;
using cuda_device::Element;
using cuda_device::kWarp;
using cuda_device::QuantizeLaneQ8;
using cuda_device::WarpSum;

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

// One block of 32 (b) of mma_q8.h's order for a warp's kMT tiles of 16
// weight rows (rows[i][0], rows[i][1]: a lane's rows g and g + 8) and kNT
// tiles of 8 batch rows from t0 (`tiles` of them hold rows): loads, the two
// k-tiles' mmas, and the block's steps into the lane's sums p.
template <typename Slice, int kMT, int kNT>
__device__ __forceinline__ void MmaBlockOfRows(const uint8_t* const (&rows)[kMT][2], int64_t b, int64_t n_in,
                                               int64_t nb, const int8_t* q, const float* d, const float* sums,
                                               int64_t n_rows, int64_t t0, int tiles, int g, int t,
                                               float (&p)[kMT][kNT][4]) {
  using namespace cuda_mma;
  using Fragment = FragmentA<Slice>;
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

// A lane's weight rows (g and g + 8 of each of kMT tiles from o0); rows
// past the end read the last row, and their sums are not stored.
template <int kMT>
__device__ __forceinline__ void LaneRows(const uint8_t* w, size_t row_bytes, int64_t n_out, int64_t o0, int g,
                                         const uint8_t* (&rows)[kMT][2]) {
  for (int i = 0; i < kMT; ++i) {
    for (int r = 0; r < 2; ++r) {
      rows[i][r] = w + static_cast<size_t>(min(o0 + i * cuda_mma::kTileRows + g + 8 * r, n_out - 1)) * row_bytes;
    }
  }
}

// Tiles of 8 batch rows from t0 that hold rows (at most kNT): the same for
// a whole warp, so every lane reaches each mma.
template <int kNT>
__device__ __forceinline__ int TilesWithRows(int64_t n_rows, int64_t t0) {
  const int64_t with_rows = (n_rows - t0 + cuda_mma::kTileCols - 1) / cuda_mma::kTileCols;
  return with_rows <= 0 ? 0 : static_cast<int>(min(static_cast<int64_t>(kNT), with_rows));
}

// Quantized weights (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) against quantized
// activations on the tensor cores (mma_q8.h): one block of kSplit warps per (kMT tiles of 16 weight rows,
// kNT tiles of 8 batch rows); warp w takes the rows' w-th run of blocks
// (SplitBlocks) and the warps' partial sums are added in order: mma_q8.h's reduction
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
  const uint8_t* rows[kMT][2];
  LaneRows<kMT>(w, row_bytes, n_out, o0, g, rows);
  const int tiles = TilesWithRows<kNT>(n_rows, t0);
  float p[kMT][kNT][4] = {};
  // Decode's blocks are few and their work small: more blocks of 32 in
  // flight per lane keep more bytes coming from HBM (two for the K quants,
  // whose scales take the registers).
  constexpr int kUnroll = kMT == 1 && kNT == 1 && Fragment::kSubBlocks == 1 ? 4 : 2;
  int64_t begin, end;
  SplitBlocks(nb, split, &begin, &end);
#pragma unroll kUnroll
  for (int64_t b = begin; b < end; ++b) {
    MmaBlockOfRows<Slice, kMT, kNT>(rows, b, n_in, nb, q, d, sums, n_rows, t0, tiles, g, t, p);
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

// The same products and the same order with the outputs split among the
// warps instead of the blocks of 32: warp (wm, wn) of kWarpsM x kWarpsN
// owns kMT tiles of 16 weight rows by kNT tiles of 8 batch rows and reads
// every block of 32 of them itself, in kSplit passes (pass w: the w-th run
// of blocks, SplitBlocks). Per output it keeps the pass's sum P_w and the running
// y = (P_0 + P_1) + ... + P_w, left to right: MmaQ8Kernel's warp 0 adds its
// warps' partials in that order, so both kernels give the same bits. A
// warp's registers hold two sums per output, not one for every output of
// the block, so a block's tile is larger (64 x 128 here against 64 x 32):
// warps sharing weight rows (or batch rows) read the same bytes at about
// the same time, through L1, so L2 sends each block's rows once.
// SWIFTLET_CUDA_PROMPT_KERNEL=output-split takes it for prompts; the first
// GPU run compares the two (scripts/gpu-check.sh).
template <typename Slice, int kMT, int kNT, int kWarpsM, int kWarpsN>
__global__ void __launch_bounds__(kWarpsM * kWarpsN * kWarp, 1)
    MmaQ8OutputSplitKernel(const uint8_t* w, size_t row_bytes, int64_t n_in, int64_t n_out, const int8_t* q,
                           const float* d, const float* sums, int64_t n_rows, float* y) {
  using namespace cuda_mma;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int wm = warp % kWarpsM, wn = warp / kWarpsM;
  const int g = lane / 4, t = lane % 4;
  const int64_t o0 = (static_cast<int64_t>(blockIdx.x) * kWarpsM + wm) * kTileRows * kMT;
  const int64_t t0 = (static_cast<int64_t>(blockIdx.y) * kWarpsN + wn) * kTileCols * kNT;
  const int64_t nb = n_in / cuda_slices::kActivationBlock;
  const int tiles = TilesWithRows<kNT>(n_rows, t0);
  if (o0 >= n_out || tiles == 0) return;  // No barrier below: a warp with nothing to do may leave.
  const uint8_t* rows[kMT][2];
  LaneRows<kMT>(w, row_bytes, n_out, o0, g, rows);
  float sum[kMT][kNT][4] = {};
  for (int pass = 0; pass < kSplit; ++pass) {
    float p[kMT][kNT][4] = {};
    int64_t begin, end;
    SplitBlocks(nb, pass, &begin, &end);
#pragma unroll 2
    for (int64_t b = begin; b < end; ++b) {
      MmaBlockOfRows<Slice, kMT, kNT>(rows, b, n_in, nb, q, d, sums, n_rows, t0, tiles, g, t, p);
    }
    for (int i = 0; i < kMT; ++i) {
      for (int j = 0; j < kNT; ++j) {
        for (int e = 0; e < 4; ++e) sum[i][j][e] = pass == 0 ? p[i][j][e] : sum[i][j][e] + p[i][j][e];
      }
    }
  }
  for (int i = 0; i < kMT; ++i) {
    for (int j = 0; j < kNT; ++j) {  // Not j < tiles: the sums stay in registers.
      for (int e = 0; e < 4; ++e) {
        const int64_t o = o0 + i * kTileRows + g + 8 * (e / 2), r = t0 + j * kTileCols + 2 * t + e % 2;
        if (o < n_out && r < n_rows) y[r * n_out + o] = sum[i][j][e];
      }
    }
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

// Calls launch(grid, xq, n, y) once per run of at most RowRunRows(cols)
// batch rows (mma_q8.h): blocks of `rows` weight rows by `cols` batch rows,
// the run's activations and outputs. One run unless a step has millions of
// rows, which gridDim.y could not hold in one launch.
template <typename Launch>
void ForEachRowRun(const WeightView& w, const QuantizedActivations& xq, int64_t n_rows, float* y, int64_t rows,
                   int64_t cols, Launch&& launch) {
  SWIFTLET_CHECK(w.n_out > 0);
  const int64_t nb = w.n_in / cuda_slices::kActivationBlock;
  const auto x_tiles = static_cast<unsigned>((w.n_out + rows - 1) / rows);
  for (int64_t i = 0; i < cuda_mma::RowRuns(n_rows, cols); ++i) {
    const int64_t r0 = cuda_mma::RowRunBegin(i, cols);
    const int64_t n = std::min(n_rows - r0, cuda_mma::RowRunRows(cols));
    const QuantizedActivations run{xq.q + r0 * w.n_in, xq.d + r0 * nb, xq.sums + r0 * nb};
    launch(dim3(x_tiles, static_cast<unsigned>((n + cols - 1) / cols)), run, n, y + r0 * w.n_out);
  }
}

template <typename Slice, int kMT, int kNT>
void LaunchMma(CudaQueue& queue, const WeightView& w, const QuantizedActivations& xq, int64_t n_rows, float* y) {
  ForEachRowRun(w, xq, n_rows, y, cuda_mma::kTileRows * kMT, cuda_mma::kTileCols * kNT,
                [&](dim3 grid, const QuantizedActivations& run, int64_t n, float* run_y) {
                  queue.Launch("MatMul (tensor cores)", MmaQ8Kernel<Slice, kMT, kNT>, grid, cuda_mma::kSplit * kWarp,
                               0, w.data, w.row_bytes, w.n_in, w.n_out, run.q, run.d, run.sums, n, run_y);
                });
}

// Warps of 32 weight rows by 32 batch rows, 2 x 4 of them a block.
template <typename Slice>
void LaunchMmaOutputSplit(CudaQueue& queue, const WeightView& w, const QuantizedActivations& xq, int64_t n_rows,
                          float* y) {
  constexpr int kMT = 2, kNT = 4, kWarpsM = 2, kWarpsN = 4;
  ForEachRowRun(w, xq, n_rows, y, cuda_mma::kTileRows * kMT * kWarpsM, cuda_mma::kTileCols * kNT * kWarpsN,
                [&](dim3 grid, const QuantizedActivations& run, int64_t n, float* run_y) {
                  queue.Launch("MatMul (tensor cores, output split)",
                               MmaQ8OutputSplitKernel<Slice, kMT, kNT, kWarpsM, kWarpsN>, grid,
                               kWarpsM * kWarpsN * kWarp, 0, w.data, w.row_bytes, w.n_in, w.n_out, run.q, run.d,
                               run.sums, n, run_y);
                });
}

}  // namespace

bool Sliced(const WeightView& w) {
  bool whole = false;
  cuda_slices::WithSlice(w.type, [&](auto slice) { whole = w.n_in % decltype(slice)::kElems == 0; });
  return whole;
}

bool IntegerDot(const WeightView& w) {
  bool integer = false;
  cuda_slices::WithSlice(w.type, [&](auto slice) { integer = decltype(slice)::kIntegerDot; });
  return integer && w.n_in % cuda_slices::kActivationBlock == 0;
}

bool TensorCoreKernelBuilt() {
  cudaFuncAttributes mma{};
  const bool built = cudaFuncGetAttributes(&mma, MmaQ8Kernel<cuda_slices::SliceQ8_0, 1, 1>) == cudaSuccess &&
                     mma.ptxVersion >= 80 && mma.binaryVersion >= 80;
  cudaGetLastError();  // A failure here is an answer, not an error to keep.
  return built;
}

void LaunchQuantize(CudaQueue& queue, const float* x, int64_t n_blocks, int8_t* q, float* d, float* sums) {
  queue.Launch("quantize activations", QuantizeActivationsKernel, Blocks(n_blocks * kWarp, 256), 256, 0, x, n_blocks,
               q, d, sums);
}

void LaunchMatMul(CudaQueue& queue, const WeightView& w, const float* x, const QuantizedActivations* xq,
                  int64_t n_rows, float* y, MatMulKernels kernels) {
  constexpr int kThreads = 256;
  const int64_t tiles = (n_rows + kRowsPerWarp - 1) / kRowsPerWarp;
  const int blocks = Blocks(w.n_out * tiles * kWarp, kThreads);
  if (xq != nullptr && cuda_mma::MmaType(w.type) && kernels.tensor_cores) {
    // Decode's few rows: 16 weight rows a block, for as many blocks as can
    // stream the weights; up to 32 batch rows (batched decode): still 16
    // weight rows, a tile of 32 batch rows, so the weights are read once;
    // a prompt: 64 weight rows a block, reading the activations a quarter
    // as often, or (output_split_prompts) 64 by 128 with the warps
    // splitting the outputs. The same bits every way (mma_q8.h).
    cuda_slices::WithSlice(w.type, [&](auto slice) {
      using S = decltype(slice);
      if constexpr (cuda_mma::FragmentA<S>::kDefined) {
        if (n_rows <= cuda_mma::kTileCols) {
          LaunchMma<S, 1, 1>(queue, w, *xq, n_rows, y);
        } else if (n_rows <= 4 * cuda_mma::kTileCols) {
          LaunchMma<S, 1, 4>(queue, w, *xq, n_rows, y);
        } else if (kernels.output_split_prompts) {
          LaunchMmaOutputSplit<S>(queue, w, *xq, n_rows, y);
        } else {
          LaunchMma<S, 4, 4>(queue, w, *xq, n_rows, y);
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
          queue.Launch("MatMul (dp4a)", MatMulQ8Kernel<S>, blocks, kThreads, 0, w.data, w.row_bytes, w.n_in, w.n_out,
                       xq->q, xq->d, n_rows, y);
          return;
        }
      }
      queue.Launch("MatMul", MatMulKernel<S>, blocks, kThreads, 0, w.data, w.row_bytes, w.n_in, w.n_out, x, n_rows, y);
    });
  } else {
    queue.Launch("MatMul", MatMulElementKernel, blocks, kThreads, 0, w.type, w.data, w.row_bytes, w.n_in, w.n_out, x,
                 n_rows, y);
  }
}

}  // namespace swiftlet::cuda_matmul
