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

// A T at an address aligned for it: one load on the GPU (where a
// misaligned one faults), memcpy on the CPU.
template <typename T>
SWIFTLET_HOST_DEVICE inline T LoadAligned(const void* p) {
#if defined(__CUDA_ARCH__)
  return *static_cast<const T*>(p);
#else
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
#endif
}

// 16 bits at a 2-byte aligned address.
SWIFTLET_HOST_DEVICE inline uint32_t Load16(const void* p) { return LoadAligned<uint16_t>(p); }

// 32 bits (little-endian) at a 2-byte aligned address: two 16-bit loads.
SWIFTLET_HOST_DEVICE inline uint32_t Load2x16(const uint8_t* p) { return Load16(p) | Load16(p + 2) << 16; }

// 32 bits at a 4-byte aligned address.
SWIFTLET_HOST_DEVICE inline uint32_t Load32(const void* p) { return LoadAligned<uint32_t>(p); }

// c + the dot product of a's and b's four signed bytes (the GPU's dp4a).
SWIFTLET_HOST_DEVICE inline int Dp4a(uint32_t a, uint32_t b, int c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(static_cast<int>(a), static_cast<int>(b), c);
#else
  for (int k = 0; k < 4; ++k) {
    c += static_cast<int8_t>(static_cast<uint8_t>(a >> (8 * k))) * static_cast<int8_t>(static_cast<uint8_t>(b >> (8 * k)));
  }
  return c;
#endif
}

// a - b in each byte, modulo 256 (the GPU's vsub4).
SWIFTLET_HOST_DEVICE inline uint32_t Sub4(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __vsub4(a, b);
#else
  uint32_t out = 0;
  for (int k = 0; k < 4; ++k) out |= (((a >> (8 * k)) - (b >> (8 * k))) & 0xFF) << (8 * k);
  return out;
#endif
}

inline constexpr uint32_t kOnes4 = 0x01010101u;

// 16 bytes at a 16-byte aligned address: one 128-bit load on the GPU.
struct alignas(16) Words4 {
  uint32_t w[4];
};
SWIFTLET_HOST_DEVICE inline Words4 Load128(const uint8_t* p) { return LoadAligned<Words4>(p); }

// The activations of a matmul with quantized weights: blocks of 32
// quantized exactly as QuantizeRowQ8_0 quantizes them (d = max|x| / 127
// rounded to F16, q = round(x · (1 / d))), which is how the CPU quantizes
// them for Q8_0 and Q4_0 weights (for the K quants it uses blocks of 256),
// stored apart: row t's quants at q + t * n_in, its scales (as floats) at
// d + t * n_in / 32 (and, for the tensor cores' K quants, the sums of its
// blocks' quants beside them: mma_q8.h).
inline constexpr int kActivationBlock = 32;

// A slice's quants as signed bytes, 4 to a word in the order of its
// weights, and the scales its DotQ8 needs (what they are is per type).
struct SliceInts {
  uint32_t q[2];
  float f[4];
};

// The slice types. Each has:
//   kElems    elements of a block (the unit rows are whole numbers of);
//   kBytes    bytes of a block;
//   kSlices   slices of a block (a power of two, at most 32);
//   kWeights  elements one slice decodes;
//   kIntegerDot  whether it multiplies quantized activations;
//   Decode(block, s, w)  w[k] = the value of element Index(s, k) of the block.
// With kIntegerDot (8 weights a slice):
//   Unpack(block, s, u)   the slice's quants and scales;
//   DotQ8(u, s, q, d)     Σ_k w_k · x[Index(s, k)] with x quantized: q and d
//                         at the block's first element and first scale.

struct SliceF32 {
  static constexpr bool kIntegerDot = false;
  static constexpr int kElems = 4, kSlices = 1, kWeights = 4;
  static constexpr size_t kBytes = 16;
  SWIFTLET_HOST_DEVICE static int Index(int, int k) { return k; }
  SWIFTLET_HOST_DEVICE static void Decode(const uint8_t* block, int, float* w) {
    const Words4 v = Load128(block);
    for (int k = 0; k < 4; ++k) w[k] = BitsToFloat(v.w[k]);
  }
};

// F16 and BF16: 8 elements of 16 bits, one 16-byte load; Bits::ToFloat
// converts one.
template <typename Bits>
struct Slice16Bit {
  static constexpr bool kIntegerDot = false;
  static constexpr int kElems = 8, kSlices = 1, kWeights = 8;
  static constexpr size_t kBytes = 16;
  SWIFTLET_HOST_DEVICE static int Index(int, int k) { return k; }
  SWIFTLET_HOST_DEVICE static void Decode(const uint8_t* block, int, float* w) {
    const Words4 v = Load128(block);
    for (int k = 0; k < 4; ++k) {
      w[2 * k] = Bits::ToFloat(static_cast<uint16_t>(v.w[k] & 0xffff));
      w[2 * k + 1] = Bits::ToFloat(static_cast<uint16_t>(v.w[k] >> 16));
    }
  }
};
struct F16Bits {
  SWIFTLET_HOST_DEVICE static float ToFloat(uint16_t bits) { return HalfToFloat(bits); }
};
struct BF16Bits {
  SWIFTLET_HOST_DEVICE static float ToFloat(uint16_t bits) { return Bf16ToFloat(bits); }
};
using SliceF16 = Slice16Bit<F16Bits>;
using SliceBF16 = Slice16Bit<BF16Bits>;

// Quant k of a SliceInts, as a signed byte.
SWIFTLET_HOST_DEVICE inline int QuantOf(const SliceInts& u, int k) {
  return static_cast<int8_t>(static_cast<uint8_t>(u.q[k / 4] >> (8 * (k % 4))));
}

// Decode for slices whose weights are quant × f[0] (Q8_0, Q4_0), from the
// type's own Unpack.
template <typename Slice>
struct ScaledQuants {
  SWIFTLET_HOST_DEVICE static void Decode(const uint8_t* block, int s, float* w) {
    SliceInts u;
    Slice::Unpack(block, s, &u);
    for (int k = 0; k < 8; ++k) w[k] = static_cast<float>(QuantOf(u, k)) * u.f[0];
  }
};

// Q8_0 (d, qs[32]): slice s is qs[8s .. 8s + 7]; f[0] = d.
struct SliceQ8_0 : ScaledQuants<SliceQ8_0> {
  static constexpr int kElems = BlockQ8_0::kElems, kSlices = 4, kWeights = 8;
  static constexpr size_t kBytes = sizeof(BlockQ8_0);
  static constexpr bool kIntegerDot = true;
  SWIFTLET_HOST_DEVICE static int Index(int s, int k) { return 8 * s + k; }
  SWIFTLET_HOST_DEVICE static void Unpack(const uint8_t* block, int s, SliceInts* u) {
    u->f[0] = HalfToFloat(static_cast<uint16_t>(Load16(block)));
    u->q[0] = Load2x16(block + 2 + 8 * s);
    u->q[1] = Load2x16(block + 2 + 8 * s + 4);
  }
  SWIFTLET_HOST_DEVICE static float DotQ8(const SliceInts& u, int s, const int8_t* q, const float* d) {
    const int sum = Dp4a(u.q[0], Load32(q + 8 * s), Dp4a(u.q[1], Load32(q + 8 * s + 4), 0));
    return static_cast<float>(sum) * (u.f[0] * d[0]);
  }
};

// Q4_0 (d, qs[16]): slice s is qs[4s .. 4s + 3], elements 4s.. in the low
// nibbles and 16 + 4s.. in the high; quants nibble - 8, f[0] = d.
struct SliceQ4_0 : ScaledQuants<SliceQ4_0> {
  static constexpr int kElems = BlockQ4_0::kElems, kSlices = 4, kWeights = 8;
  static constexpr size_t kBytes = sizeof(BlockQ4_0);
  static constexpr bool kIntegerDot = true;
  SWIFTLET_HOST_DEVICE static int Index(int s, int k) { return (k < 4 ? 0 : 16) + 4 * s + k % 4; }
  SWIFTLET_HOST_DEVICE static void Unpack(const uint8_t* block, int s, SliceInts* u) {
    u->f[0] = HalfToFloat(static_cast<uint16_t>(Load16(block)));
    const uint32_t q = Load2x16(block + 2 + 4 * s);
    u->q[0] = Sub4(q & 0x0F0F0F0Fu, 0x08080808u);
    u->q[1] = Sub4(q >> 4 & 0x0F0F0F0Fu, 0x08080808u);
  }
  SWIFTLET_HOST_DEVICE static float DotQ8(const SliceInts& u, int s, const int8_t* q, const float* d) {
    const int sum = Dp4a(u.q[0], Load32(q + 4 * s), Dp4a(u.q[1], Load32(q + 16 + 4 * s), 0));
    return static_cast<float>(sum) * (u.f[0] * d[0]);
  }
};

// Q4_K and Q5_K: slice s takes 4 bytes of group g = s / 8 (64 elements,
// sub-blocks 2g in the low nibbles and 2g + 1 in the high), l0 = 4 (s % 8):
// elements 64g + l0.. and 64g + 32 + l0.. (and the same 4 bytes of qh).
// Quants 0..15 (0..31 for Q5_K); f = d1, m1, d2, m2, the two sub-blocks'
// scales and mins as DequantizeRow computes them: w = d1 q - m1, d2 q - m2.
template <typename Slice>
struct SliceK4Base {
  static constexpr int kElems = kQK_K, kSlices = 32, kWeights = 8;
  static constexpr bool kIntegerDot = true;
  SWIFTLET_HOST_DEVICE static int Index(int s, int k) { return 64 * (s / 8) + (k < 4 ? 0 : 32) + 4 * (s % 8) + k % 4; }
  // Both block types start d, dmin, scales[12].
  SWIFTLET_HOST_DEVICE static void UnpackScales(const uint8_t* block, int g, float* f) {
    const BlockQ4_K* b = reinterpret_cast<const BlockQ4_K*>(block);
    const float d = HalfToFloat(static_cast<uint16_t>(Load16(block)));
    const float dmin = HalfToFloat(static_cast<uint16_t>(Load16(block + 2)));
    uint8_t sc, m;
    UnpackScaleMinK4(b->scales, 2 * g, &sc, &m);
    f[0] = d * sc;
    f[1] = dmin * m;
    UnpackScaleMinK4(b->scales, 2 * g + 1, &sc, &m);
    f[2] = d * sc;
    f[3] = dmin * m;
  }
  SWIFTLET_HOST_DEVICE static void Decode(const uint8_t* block, int s, float* w) {
    SliceInts u;
    Slice::Unpack(block, s, &u);
    for (int k = 0; k < 4; ++k) {
      w[k] = u.f[0] * static_cast<float>(QuantOf(u, k)) - u.f[1];
      w[k + 4] = u.f[2] * static_cast<float>(QuantOf(u, k + 4)) - u.f[3];
    }
  }
  // Against quantized x: each half's sum is d_x (d1 Σ q x - m1 Σ x) over
  // its four elements, x's blocks 2g and 2g + 1.
  SWIFTLET_HOST_DEVICE static float DotQ8(const SliceInts& u, int s, const int8_t* q, const float* d) {
    const int g = s / 8, l0 = 4 * (s % 8);
    const uint32_t xa = Load32(q + 64 * g + l0), xb = Load32(q + 64 * g + 32 + l0);
    const float a = u.f[0] * static_cast<float>(Dp4a(u.q[0], xa, 0)) - u.f[1] * static_cast<float>(Dp4a(kOnes4, xa, 0));
    const float b = u.f[2] * static_cast<float>(Dp4a(u.q[1], xb, 0)) - u.f[3] * static_cast<float>(Dp4a(kOnes4, xb, 0));
    return d[2 * g] * a + d[2 * g + 1] * b;
  }
};

struct SliceQ4_K : SliceK4Base<SliceQ4_K> {
  static constexpr size_t kBytes = sizeof(BlockQ4_K);
  SWIFTLET_HOST_DEVICE static void Unpack(const uint8_t* block, int s, SliceInts* u) {
    const int g = s / 8, l0 = 4 * (s % 8);
    UnpackScales(block, g, u->f);
    const uint32_t q = Load2x16(reinterpret_cast<const BlockQ4_K*>(block)->qs + 32 * g + l0);
    u->q[0] = q & 0x0F0F0F0Fu;
    u->q[1] = q >> 4 & 0x0F0F0F0Fu;
  }
};

struct SliceQ5_K : SliceK4Base<SliceQ5_K> {
  static constexpr size_t kBytes = sizeof(BlockQ5_K);
  SWIFTLET_HOST_DEVICE static void Unpack(const uint8_t* block, int s, SliceInts* u) {
    const BlockQ5_K* b = reinterpret_cast<const BlockQ5_K*>(block);
    const int g = s / 8, l0 = 4 * (s % 8);
    UnpackScales(block, g, u->f);
    const uint32_t ql = Load2x16(b->qs + 32 * g + l0);
    const uint32_t qh = Load2x16(b->qh + l0);
    // Bit 2g (low half) or 2g + 1 (high) of each qh byte, moved to bit 4.
    u->q[0] = (ql & 0x0F0F0F0Fu) | (qh >> (2 * g) & kOnes4) << 4;
    u->q[1] = (ql >> 4 & 0x0F0F0F0Fu) | (qh >> (2 * g + 1) & kOnes4) << 4;
  }
};

// Q6_K: slice s takes l0 = 2 (s % 16), l0 + 1 of half h = s / 16: the two
// ql bytes at l0 and l0 + 32 and the qh byte of each l, which give the four
// quadrants' elements 128h + 32g + l (g = 0..3; weight k = 2g + (l - l0)).
// Quants q - 32; f[g] = d · quadrant g's scale; x's block of quadrant g is
// 4h + g.
struct SliceQ6_K {
  static constexpr int kElems = BlockQ6_K::kElems, kSlices = 32, kWeights = 8;
  static constexpr size_t kBytes = sizeof(BlockQ6_K);
  static constexpr bool kIntegerDot = true;
  SWIFTLET_HOST_DEVICE static int Index(int s, int k) { return 128 * (s / 16) + 32 * (k / 2) + 2 * (s % 16) + k % 2; }
  SWIFTLET_HOST_DEVICE static void Unpack(const uint8_t* block, int s, SliceInts* u) {
    const BlockQ6_K* b = reinterpret_cast<const BlockQ6_K*>(block);
    const int h = s / 16, l0 = 2 * (s % 16);
    const float d = HalfToFloat(static_cast<uint16_t>(Load16(block + offsetof(BlockQ6_K, d))));
    const uint32_t ql[2] = {Load16(b->ql + 64 * h + l0), Load16(b->ql + 64 * h + 32 + l0)};
    const uint32_t qh = Load16(b->qh + 32 * h + l0);
    const int8_t* scales = b->scales + 8 * h + l0 / 16;
    u->q[0] = u->q[1] = 0;
    for (int g = 0; g < 4; ++g) {
      u->f[g] = d * scales[2 * g];
      for (int i = 0; i < 2; ++i) {
        const uint32_t low = ql[g % 2] >> (8 * i + (g < 2 ? 0 : 4)) & 0xF;
        const uint32_t high = qh >> (8 * i + 2 * g) & 3;
        const int k = 2 * g + i;
        u->q[k / 4] |= (((low | high << 4) - 32) & 0xFF) << (8 * (k % 4));
      }
    }
  }
  SWIFTLET_HOST_DEVICE static void Decode(const uint8_t* block, int s, float* w) {
    SliceInts u;
    Unpack(block, s, &u);
    for (int k = 0; k < 8; ++k) w[k] = u.f[k / 2] * static_cast<float>(QuantOf(u, k));
  }
  SWIFTLET_HOST_DEVICE static float DotQ8(const SliceInts& u, int s, const int8_t* q, const float* d) {
    const int h = s / 16, l0 = 2 * (s % 16);
    float sum = 0;
    for (int g = 0; g < 4; ++g) {
      // Quadrant g's two x quants in the half of a word where its two
      // weight quants are in u.q, everything else zero.
      const uint32_t x = Load16(q + 128 * h + 32 * g + l0) << (16 * (g % 2));
      const uint32_t w = u.q[g / 2] & (0xFFFFu << (16 * (g % 2)));
      sum += d[4 * h + g] * (u.f[g] * static_cast<float>(Dp4a(w, x, 0)));
    }
    return sum;
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

// The walk every matmul lane makes over a weight row of n_blocks blocks:
// lane L takes slice s = L % kSlices of blocks L / kSlices, + 32 / kSlices,
// ... in that order, calling step(b, s) for each. The kernels sum the 32
// lanes afterwards in a fixed butterfly, so a row's result does not depend
// on the other rows of its tile.
template <typename Slice, typename Step>
SWIFTLET_HOST_DEVICE inline void ForEachLaneSlice(int64_t n_blocks, int lane, Step&& step) {
  constexpr int kBlocksPerPass = 32 / Slice::kSlices;
  const int s = lane % Slice::kSlices;
  // Four passes' loads in flight per lane: at batch 1 a warp has little
  // else to do while they come from HBM.
#if defined(__CUDA_ARCH__)
#pragma unroll 4
#endif
  for (int64_t b = lane / Slice::kSlices; b < n_blocks; b += kBlocksPerPass) step(b, s);
}

// One lane's share of W · x[r] for the batch rows r < rows (at most
// kRowsPerWarp) of a row `w`: each weight of each of its slices times
// x[r][element], added into sum[r]. x[r] starts at x + r * x_stride.
template <typename Slice>
SWIFTLET_HOST_DEVICE inline void AccumulateLane(const uint8_t* w, int64_t n_blocks, const float* x, int64_t x_stride,
                                                int rows, int lane, float* sum) {
  ForEachLaneSlice<Slice>(n_blocks, lane, [&](int64_t b, int s) {
    float wk[Slice::kWeights];
    Slice::Decode(w + static_cast<size_t>(b) * Slice::kBytes, s, wk);
    const float* xb = x + b * Slice::kElems;
    for (int r = 0; r < kRowsPerWarp; ++r) {
      if (r >= rows) break;
      for (int k = 0; k < Slice::kWeights; ++k) sum[r] += wk[k] * xb[r * x_stride + Slice::Index(s, k)];
    }
  });
}

// AccumulateLane for quantized weights against quantized activations
// (kActivationBlock): row r's quants at q + r * x_stride, its scales at
// d + r * x_stride / 32; each slice's integer dot product, scaled.
template <typename Slice>
SWIFTLET_HOST_DEVICE inline void AccumulateLaneQ8(const uint8_t* w, int64_t n_blocks, const int8_t* q, const float* d,
                                                  int64_t x_stride, int rows, int lane, float* sum) {
  static_assert(Slice::kIntegerDot && Slice::kElems % kActivationBlock == 0);
  ForEachLaneSlice<Slice>(n_blocks, lane, [&](int64_t b, int s) {
    SliceInts u;
    Slice::Unpack(w + static_cast<size_t>(b) * Slice::kBytes, s, &u);
    for (int r = 0; r < kRowsPerWarp; ++r) {
      if (r >= rows) break;
      sum[r] += Slice::DotQ8(u, s, q + r * x_stride + b * Slice::kElems,
                             d + r * (x_stride / kActivationBlock) + b * (Slice::kElems / kActivationBlock));
    }
  });
}

}  // namespace swiftlet::cuda_slices
