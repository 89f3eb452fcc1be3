// Weights repacked once at load so a SIMD kernel computes 16 output rows at
// once without a horizontal sum per block (WeightLayout::kRows16).
//
// The file's row-major blocks make a dot product reduce 32 lanes to one
// number per block, which costs more than the multiply-adds themselves. In
// kRows16 the rows are taken 16 at a time and interleaved 4 bytes at a time,
// so one VPDPBUSD multiplies 4 elements of 16 rows by the same 4 activation
// bytes and each int32 lane accumulates one row's block sum. The per-block
// float arithmetic is then the scalar specification's (vec_dot.cc), lane by
// lane, so results stay bit-identical to VecDotScalar.
//
// Layout: groups of 16 rows one after another, each group_bytes =
// (n_in / block elements) * (PackedCodeBytes + PackedScaleBytes) long. A
// group holds first the codes of its blocks in block order, then their
// scales, so the code loads stay 64-byte aligned:
//   Q8_0, 512 code bytes per block: q[8][16][4], q[g][r][i] = row r's
//     element 4g+i plus 128 (stored unsigned); scales uint16 d[16].
//   Q4_0, 256 code bytes per block: q[4][16][4], low nibble of q[g][r][i] =
//     row r's element 8g+i, high nibble element 8g+4+i (the stored 0..15
//     codes; the -8 is applied to the block sum); scales uint16 d[16].
//   Q4_K, 2048 code bytes per 256-element block: as Q4_0 over 32 groups of
//     8 elements (sub-block j = groups 4j..4j+3); scales uint8 sc[8][16],
//     uint8 m[4][16][2] (m[p][r][i]: row r's minimum of sub-block 2p+i;
//     the 6-bit values unpacked), uint16 d[16], dmin[16].
//   Q5_K, 2560 code bytes per 256-element block: the low 4 bits of the
//     0..31 codes as Q4_K (2048 bytes), then the fifth bits, 64 bytes per
//     sub-block j: bit m of byte i of row r is element 32j+4m+i's (so the
//     nibbles of Q4_K's group 4j+k take bits 2k and 2k+1); scales as Q4_K.
//   Q6_K, 3072 code bytes per 256-element block: three 64-byte lines per
//     16-element sub-block m, q[m][f][16][4]: bits 0-5 of q[m][f][r][i] are
//     row r's 0..63 code of element 16m+4f+i, bits 6-7 bits 2f and 2f+1 of
//     its code of element 16m+12+i (the sub-block's fourth quarter, in
//     pieces: decoding it and masking the others costs less than joining
//     4-bit and 2-bit fields); scales int8 sc[16][16], uint16 d[16]. The
//     -32 is applied to the block sums.
//   F32, F16, BF16 (a block is one element): element i of row r at
//     (16 * i + r) * element bytes, no scales; each lane then sums its row
//     in the scalar code's order.
#pragma once

#include <cstdint>
#include <memory>

#include "core/huge_page_buffer.h"
#include "core/tensor_type.h"
#include "kernels/backend.h"
#include "kernels/cpu_features.h"
#include "kernels/quant_blocks.h"

namespace swiftlet {

inline constexpr int64_t kPackRows = 16;

// Bytes one 16-row group spends on the codes and on the scales of one
// block, or 0 if `type` has no packed layout.
size_t PackedCodeBytes(TensorType type);
size_t PackedScaleBytes(TensorType type);

// Whether `isa` has a packed kernel for `type` (weights of that type are
// repacked at load).
bool HasPackedKernel(KernelIsa isa, TensorType type);

// Owns a repacked weight; view() describes it (layout kRows16).
class PackedWeight {
 public:
  const WeightView& view() const { return view_; }
  size_t bytes() const { return bytes_; }

 private:
  friend std::unique_ptr<PackedWeight> PackWeight(const WeightView& w, KernelIsa isa, int threads);
  HugePageBuffer data_;  // On 2 MiB pages: decode streams it every token.
  size_t bytes_ = 0;
  WeightView view_;
};

// Repacks `w` (layout kRows) when `isa` has a packed kernel for its type and
// it has at least 16 rows; null otherwise (keep the file's layout), also
// when the memory for the copy cannot be had. Rows
// past the last whole group of 16 stay in the file (view().tail points at
// them), so `w`'s bytes must outlive the result. `threads` share the copying.
std::unique_ptr<PackedWeight> PackWeight(const WeightView& w, KernelIsa isa, int threads);

// Activation rows prepared for the packed kernels: the rows MatMul
// quantizes anyway (Q8_0 for Q8_0/Q4_0 weights, Q8_K for the K types), each
// block's scale as a float, and the sums of its quants per 32 elements (16
// for Q6_K), for the offsets and minimums the packed codes carry. For the
// float weights the rows are F32 and scales and sums are null.
struct PackedActivations {
  const uint8_t* rows = nullptr;   // n_rows rows of row_bytes
  size_t row_bytes = 0;
  const float* scales = nullptr;   // [n_rows][n_blocks]
  const int32_t* sums = nullptr;   // [n_rows][n_blocks][sums_per_block]
  int64_t n_rows = 0;
  int64_t n_blocks = 0;
  int sums_per_block = 1;
};

// Elements per activation sum the packed kernel for `weight_type` wants (0
// for the float types: their activations stay F32).
int64_t PackedSumElems(TensorType weight_type);

// Fills scales and sums for rows already quantized to `act_type` (Q8_0 or
// Q8_K), one sum per `sum_elems` (32, or 16 for Q8_K); `scales` holds
// n_rows * n_in / block entries, `sums` n_rows * n_in / sum_elems.
void PrepareActivationSums(TensorType act_type, const uint8_t* rows, int64_t n_rows, int64_t n_in,
                           int64_t sum_elems, float* scales, int32_t* sums);

// y[t * y_stride + o] for every activation row t and output rows
// o in [16 * group_begin, 16 * group_end) of a kRows16 weight.
void PackedMatMul(const WeightView& w, const PackedActivations& act, int64_t group_begin,
                  int64_t group_end, float* y, int64_t y_stride);

}  // namespace swiftlet
