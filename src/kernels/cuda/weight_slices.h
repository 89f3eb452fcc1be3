// Weight rows cut into slices for the CUDA matmul and embedding kernels.
//
// A slice is the part of one block that one GPU thread decodes at a time:
// a few wide loads, then kWeights floats. The kSlices slices of a block go to
// neighbouring lanes of a warp, so the warp's loads of one pass cover
// 32 / kSlices whole blocks of contiguous memory, and every weight byte is
// read once per pass whatever the type (the plain kernel read one element per
// lane per step, and a K-quant block's scales with it).
//
// Each type's Decode computes the same float operations as DequantizeRow
// (kernels/dequantize.cc), so on the CPU the values are the same bits; the
// CPU test (tests/kernels/cuda_weight_slices_test.cc) checks that, that the
// slices cover every element once, and the matmul lane arithmetic below
// against double-precision math. This header compiles as plain C++ so that
// test runs without a GPU; under nvcc the same functions are the kernels'.
//
// Alignment: every block type has an even size, so 16-bit loads are always
// aligned; F32/F16/BF16 slices are 16 bytes, and are used only when a row is
// a whole number of them (rows then start 16-byte aligned in cudaMalloc'd
// memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/host_device.h"
#include "core/tensor_type.h"
#include "kernels/float16.h"
#include "kernels/quant_blocks.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace swiftlet::cuda_slices {

SWIFTLET_HOST_DEVICE inline float HalfToFloat(uint16_t bits) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(bits));
#else
  return Fp16ToFp32(bits);
#endif
}

SWIFTLET_HOST_DEVICE inline float BitsToFloat(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

SWIFTLET_HOST_DEVICE inline float Bf16ToFloat(uint16_t bits) { return BitsToFloat(static_cast<uint32_t>(bits) << 16); }

// 16 bits at a 2-byte aligned address.
SWIFTLET_HOST_DEVICE inline uint32_t Load16(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint16_t*>(p);
#else
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
#endif
}

// 32 bits (little-endian) at a 2-byte aligned address: two 16-bit loads on
// the GPU, where a misaligned 32-bit load faults.
SWIFTLET_HOST_DEVICE inline uint32_t Load2x16(const uint8_t* p) { return Load16(p) | Load16(p + 2) << 16; }

struct Words4 {
  uint32_t w[4];
};

// 16 bytes at a 16-byte aligned address: one 128-bit load on the GPU.
SWIFTLET_HOST_DEVICE inline Words4 Load128(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  const uint4 v = *reinterpret_cast<const uint4*>(p);
  return {{v.x, v.y, v.z, v.w}};
#else
  Words4 v;
  std::memcpy(v.w, p, sizeof v.w);
  return v;
#endif
}

// The slice types. Each has:
//   kElems    elements of a block (the unit rows are whole numbers of);
//   kBytes    bytes of a block;
//   kSlices   slices of a block (a power of two, at most 32);
//   kWeights  elements one slice decodes;
//   Decode(block, s, w)  w[k] = the value of element Index(s, k) of the block.

struct SliceF32 {
  static constexpr int kElems = 4, kSlices = 1, kWeights = 4;
  static constexpr size_t kBytes = 16;
  SWIFTLET_HOST_DEVICE static int Index(int, int k) { return k; }
  SWIFTLET_HOST_DEVICE static void Decode(const uint8_t* block, int, float* w) {
    const Words4 v = Load128(block);
    for (int k = 0; k < 4; ++k) w[k] = BitsToFloat(v.w[k]);
  }
};

struct SliceF16 {
  static constexpr int kElems = 8, kSlices = 1, kWeights = 8;
  static constexpr size_t kBytes = 16;
  SWIFTLET_HOST_DEVICE static int Index(int, int k) { return k; }
  SWIFTLET_HOST_DEVICE static void Decode(const uint8_t* block, int, float* w) {
    const Words4 v = Load128(block);
    for (int k = 0; k < 4; ++k) {
      w[2 * k] = HalfToFloat(static_cast<uint16_t>(v.w[k] & 0xffff));
      w[2 * k + 1] = HalfToFloat(static_cast<uint16_t>(v.w[k] >> 16));
    }
  }
};

struct SliceBF16 {
  static constexpr int kElems = 8, kSlices = 1, kWeights = 8;
  static constexpr size_t kBytes = 16;
  SWIFTLET_HOST_DEVICE static int Index(int, int k) { return k; }
  SWIFTLET_HOST_DEVICE static void Decode(const uint8_t* block, int, float* w) {
    const Words4 v = Load128(block);
    for (int k = 0; k < 4; ++k) {
      w[2 * k] = Bf16ToFloat(static_cast<uint16_t>(v.w[k] & 0xffff));
      w[2 * k + 1] = Bf16ToFloat(static_cast<uint16_t>(v.w[k] >> 16));
    }
  }
};

// Q8_0 (d, qs[32]): slice s is qs[8s .. 8s + 7].
struct SliceQ8_0 {
  static constexpr int kElems = BlockQ8_0::kElems, kSlices = 4, kWeights = 8;
  static constexpr size_t kBytes = sizeof(BlockQ8_0);
  SWIFTLET_HOST_DEVICE static int Index(int s, int k) { return 8 * s + k; }
  SWIFTLET_HOST_DEVICE static void Decode(const uint8_t* block, int s, float* w) {
    const float d = HalfToFloat(static_cast<uint16_t>(Load16(block)));
    const uint32_t q[2] = {Load2x16(block + 2 + 8 * s), Load2x16(block + 2 + 8 * s + 4)};
    for (int k = 0; k < 8; ++k) {
      const auto v = static_cast<int8_t>(static_cast<uint8_t>(q[k / 4] >> (8 * (k % 4))));
      w[k] = static_cast<float>(v) * d;
    }
  }
};

// Q4_0 (d, qs[16]): slice s is qs[4s .. 4s + 3], elements 4s.. in the low
// nibbles and 16 + 4s.. in the high.
struct SliceQ4_0 {
  static constexpr int kElems = BlockQ4_0::kElems, kSlices = 4, kWeights = 8;
  static constexpr size_t kBytes = sizeof(BlockQ4_0);
  SWIFTLET_HOST_DEVICE static int Index(int s, int k) { return (k < 4 ? 0 : 16) + 4 * s + k % 4; }
  SWIFTLET_HOST_DEVICE static void Decode(const uint8_t* block, int s, float* w) {
    const float d = HalfToFloat(static_cast<uint16_t>(Load16(block)));
    const uint32_t q = Load2x16(block + 2 + 4 * s);
    for (int k = 0; k < 8; ++k) {
      const int nibble = static_cast<int>((q >> (8 * (k % 4) + (k < 4 ? 0 : 4))) & 0xF);
      w[k] = static_cast<float>(nibble - 8) * d;
    }
  }
};

// Q4_K and Q5_K: slice s takes 4 bytes of group g = s / 8 (64 elements,
// sub-blocks 2g in the low nibbles and 2g + 1 in the high), l0 = 4 (s % 8):
// elements 64g + l0.. and 64g + 32 + l0.. (and the same 4 bytes of qh).
SWIFTLET_HOST_DEVICE inline int IndexK4(int s, int k) { return 64 * (s / 8) + (k < 4 ? 0 : 32) + 4 * (s % 8) + k % 4; }

struct SliceQ4_K {
  static constexpr int kElems = BlockQ4_K::kElems, kSlices = 32, kWeights = 8;
  static constexpr size_t kBytes = sizeof(BlockQ4_K);
  SWIFTLET_HOST_DEVICE static int Index(int s, int k) { return IndexK4(s, k); }
  SWIFTLET_HOST_DEVICE static void Decode(const uint8_t* block, int s, float* w) {
    const BlockQ4_K* b = reinterpret_cast<const BlockQ4_K*>(block);
    const int g = s / 8, l0 = 4 * (s % 8);
    const float d = HalfToFloat(static_cast<uint16_t>(Load16(block)));
    const float dmin = HalfToFloat(static_cast<uint16_t>(Load16(block + 2)));
    uint8_t sc, m;
    UnpackScaleMinK4(b->scales, 2 * g, &sc, &m);
    const float d1 = d * sc, m1 = dmin * m;
    UnpackScaleMinK4(b->scales, 2 * g + 1, &sc, &m);
    const float d2 = d * sc, m2 = dmin * m;
    const uint32_t q = Load2x16(b->qs + 32 * g + l0);
    for (int k = 0; k < 4; ++k) {
      w[k] = d1 * static_cast<float>((q >> (8 * k)) & 0xF) - m1;
      w[k + 4] = d2 * static_cast<float>((q >> (8 * k + 4)) & 0xF) - m2;
    }
  }
};

struct SliceQ5_K {
  static constexpr int kElems = BlockQ5_K::kElems, kSlices = 32, kWeights = 8;
  static constexpr size_t kBytes = sizeof(BlockQ5_K);
  SWIFTLET_HOST_DEVICE static int Index(int s, int k) { return IndexK4(s, k); }
  SWIFTLET_HOST_DEVICE static void Decode(const uint8_t* block, int s, float* w) {
    const BlockQ5_K* b = reinterpret_cast<const BlockQ5_K*>(block);
    const int g = s / 8, l0 = 4 * (s % 8);
    const float d = HalfToFloat(static_cast<uint16_t>(Load16(block)));
    const float dmin = HalfToFloat(static_cast<uint16_t>(Load16(block + 2)));
    uint8_t sc, m;
    UnpackScaleMinK4(b->scales, 2 * g, &sc, &m);
    const float d1 = d * sc, m1 = dmin * m;
    UnpackScaleMinK4(b->scales, 2 * g + 1, &sc, &m);
    const float d2 = d * sc, m2 = dmin * m;
    const uint32_t ql = Load2x16(b->qs + 32 * g + l0);
    const uint32_t qh = Load2x16(b->qh + l0);
    for (int k = 0; k < 4; ++k) {
      const uint32_t high = qh >> (8 * k);
      const uint32_t lo = ((ql >> (8 * k)) & 0xF) + ((high >> (2 * g)) & 1 ? 16 : 0);
      const uint32_t hi = ((ql >> (8 * k + 4)) & 0xF) + ((high >> (2 * g + 1)) & 1 ? 16 : 0);
      w[k] = d1 * static_cast<float>(lo) - m1;
      w[k + 4] = d2 * static_cast<float>(hi) - m2;
    }
  }
};

// Q6_K: slice s takes l0 = 2 (s % 16), l0 + 1 of half h = s / 16: the two
// ql bytes at l0 and l0 + 32 and the qh byte of each l, which give the four
// quadrants' elements 128h + 32g + l (g = 0..3; weight k = 2g + (l - l0)).
struct SliceQ6_K {
  static constexpr int kElems = BlockQ6_K::kElems, kSlices = 32, kWeights = 8;
  static constexpr size_t kBytes = sizeof(BlockQ6_K);
  SWIFTLET_HOST_DEVICE static int Index(int s, int k) { return 128 * (s / 16) + 32 * (k / 2) + 2 * (s % 16) + k % 2; }
  SWIFTLET_HOST_DEVICE static void Decode(const uint8_t* block, int s, float* w) {
    const BlockQ6_K* b = reinterpret_cast<const BlockQ6_K*>(block);
    const int h = s / 16, l0 = 2 * (s % 16);
    const float d = HalfToFloat(static_cast<uint16_t>(Load16(block + offsetof(BlockQ6_K, d))));
    const uint32_t ql[2] = {Load16(b->ql + 64 * h + l0), Load16(b->ql + 64 * h + 32 + l0)};
    const uint32_t qh = Load16(b->qh + 32 * h + l0);
    const int8_t* scales = b->scales + 8 * h + l0 / 16;
    for (int g = 0; g < 4; ++g) {
      for (int i = 0; i < 2; ++i) {
        const uint32_t low = ql[g % 2] >> (8 * i + (g < 2 ? 0 : 4)) & 0xF;
        const uint32_t high = qh >> (8 * i + 2 * g) & 3;
        const int q = static_cast<int>(low | high << 4) - 32;
        w[2 * g + i] = d * scales[2 * g] * static_cast<float>(q);
      }
    }
  }
};

// Calls f(Slice{}) for the slice type of `type` and returns true, or
// returns false for a type without one.
template <typename F>
bool WithSlice(TensorType type, F&& f) {
  switch (type) {
    case TensorType::kF32: f(SliceF32{}); return true;
    case TensorType::kF16: f(SliceF16{}); return true;
    case TensorType::kBF16: f(SliceBF16{}); return true;
    case TensorType::kQ8_0: f(SliceQ8_0{}); return true;
    case TensorType::kQ4_0: f(SliceQ4_0{}); return true;
    case TensorType::kQ4_K: f(SliceQ4_K{}); return true;
    case TensorType::kQ5_K: f(SliceQ5_K{}); return true;
    case TensorType::kQ6_K: f(SliceQ6_K{}); return true;
    default: return false;
  }
}

// Batch rows per warp in the matmul: each weight slice is decoded once for
// this many activation rows.
inline constexpr int kRowsPerWarp = 8;

// One lane's share of W · x[r] for the batch rows r < rows (at most
// kRowsPerWarp) of a row `w` of n_blocks blocks: lane L decodes slice
// L % kSlices of blocks L / kSlices, + 32 / kSlices, ... and adds each
// weight times x[r][element] into sum[r], in that order. x[r] starts at
// x + r * x_stride. The kernel then sums the 32 lanes in a fixed butterfly,
// so row r's result does not depend on the other rows of its tile.
template <typename Slice>
SWIFTLET_HOST_DEVICE inline void AccumulateLane(const uint8_t* w, int64_t n_blocks, const float* x, int64_t x_stride,
                                                int rows, int lane, float* sum) {
  constexpr int kBlocksPerPass = 32 / Slice::kSlices;
  const int s = lane % Slice::kSlices;
  // Four passes' loads in flight per lane: at batch 1 a warp has little
  // else to do while they come from HBM.
#if defined(__CUDA_ARCH__)
#pragma unroll 4
#endif
  for (int64_t b = lane / Slice::kSlices; b < n_blocks; b += kBlocksPerPass) {
    float wk[Slice::kWeights];
    Slice::Decode(w + static_cast<size_t>(b) * Slice::kBytes, s, wk);
    const float* xb = x + b * Slice::kElems;
    for (int r = 0; r < kRowsPerWarp; ++r) {
      if (r >= rows) break;
      for (int k = 0; k < Slice::kWeights; ++k) sum[r] += wk[k] * xb[r * x_stride + Slice::Index(s, k)];
    }
  }
}

}  // namespace swiftlet::cuda_slices
