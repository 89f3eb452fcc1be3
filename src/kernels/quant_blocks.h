// The quantized block formats, byte for byte as GGUF files store them (the
// ggml layouts). One struct per type, tied to its TensorType and checked
// against core's block geometry. Scales stored as F16 are raw uint16_t bits.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "core/tensor_type.h"

namespace swiftlet {

inline constexpr int kQK = 32;    // Elements per block of the 32-wide formats.
inline constexpr int kQK_K = 256; // Elements per super-block of the K formats.

// x = (q - 8) * d; element j in the low nibble of qs[j], j + 16 in the high.
struct BlockQ4_0 {
  static constexpr TensorType kType = TensorType::kQ4_0;
  static constexpr int kElems = kQK;
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// x = q * d + m; nibbles as Q4_0.
struct BlockQ4_1 {
  static constexpr TensorType kType = TensorType::kQ4_1;
  static constexpr int kElems = kQK;
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};

// x = (q - 16) * d; q's fifth bit for element j is bit j of qh (little-endian).
struct BlockQ5_0 {
  static constexpr TensorType kType = TensorType::kQ5_0;
  static constexpr int kElems = kQK;
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// x = q * d + m; bits as Q5_0.
struct BlockQ5_1 {
  static constexpr TensorType kType = TensorType::kQ5_1;
  static constexpr int kElems = kQK;
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// x = q * d.
struct BlockQ8_0 {
  static constexpr TensorType kType = TensorType::kQ8_0;
  static constexpr int kElems = kQK;
  uint16_t d;
  int8_t qs[kQK];
};

// 8 sub-blocks of 32: x = d * sc[j] * q - dmin * m[j], with 6-bit sc and m
// packed into scales[12] (see UnpackScaleMinK4). In each 64-element group g,
// qs[32g + l] holds sub-block 2g in its low nibble and 2g + 1 in its high.
struct BlockQ4_K {
  static constexpr TensorType kType = TensorType::kQ4_K;
  static constexpr int kElems = kQK_K;
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};

// As Q4_K with a fifth bit: sub-block s takes bit s of qh[l] for element l.
struct BlockQ5_K {
  static constexpr TensorType kType = TensorType::kQ5_K;
  static constexpr int kElems = kQK_K;
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16: x = d * scales[j] * (q - 32), q of 6 bits: low 4 in
// ql, high 2 in qh (layout in DequantizeRowQ6_K).
struct BlockQ6_K {
  static constexpr TensorType kType = TensorType::kQ6_K;
  static constexpr int kElems = kQK_K;
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

// The activation format of the K-quant dot products: x = d * q, with the
// sums of each 16 quants kept for the min terms.
struct BlockQ8_K {
  static constexpr TensorType kType = TensorType::kQ8_K;
  static constexpr int kElems = kQK_K;
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

#define SWIFTLET_CHECK_BLOCK(B)                                            \
  static_assert(sizeof(B) == BlockBytes(B::kType), #B " byte size");       \
  static_assert(B::kElems == static_cast<int>(BlockElems(B::kType)), #B " element count")
SWIFTLET_CHECK_BLOCK(BlockQ4_0);
SWIFTLET_CHECK_BLOCK(BlockQ4_1);
SWIFTLET_CHECK_BLOCK(BlockQ5_0);
SWIFTLET_CHECK_BLOCK(BlockQ5_1);
SWIFTLET_CHECK_BLOCK(BlockQ8_0);
SWIFTLET_CHECK_BLOCK(BlockQ4_K);
SWIFTLET_CHECK_BLOCK(BlockQ5_K);
SWIFTLET_CHECK_BLOCK(BlockQ6_K);
SWIFTLET_CHECK_BLOCK(BlockQ8_K);
#undef SWIFTLET_CHECK_BLOCK

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block:
// j < 4 in the low 6 bits of bytes j and j + 4; j >= 4 split between the low
// or high nibble of byte j + 4 and the top 2 bits of bytes j - 4 and j.
// Internal linkage on purpose: the ISA variants (compiled with -mavx2 or
// -mavx512*) include this header, and a shared inline copy could be the one
// the linker keeps for scalar callers on CPUs without those instructions.
// The CUDA kernels decode with this same function.
SWIFTLET_HOST_DEVICE static inline void UnpackScaleMinK4(const uint8_t* scales, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

}  // namespace swiftlet
