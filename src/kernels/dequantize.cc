#include "kernels/dequantize.h"

#include <cstring>

#include "core/check.h"
#include "kernels/float16.h"
#include "kernels/quant_blocks.h"

namespace swiftlet {
namespace {

void RowQ4_0(const BlockQ4_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = Fp16ToFp32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>((b[i].qs[j] & 0xF) - 8) * d;
      y[j + kQK / 2] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void RowQ4_1(const BlockQ4_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = Fp16ToFp32(b[i].d);
    const float m = Fp16ToFp32(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(b[i].qs[j] & 0xF) * d + m;
      y[j + kQK / 2] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

uint32_t LoadQh(const uint8_t* qh) {
  uint32_t v;
  std::memcpy(&v, qh, 4);
  return v;
}

void RowQ5_0(const BlockQ5_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = Fp16ToFp32(b[i].d);
    const uint32_t qh = LoadQh(b[i].qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b[i].qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1) << 4);
      const int hi = (b[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
      y[j] = static_cast<float>(lo - 16) * d;
      y[j + kQK / 2] = static_cast<float>(hi - 16) * d;
    }
  }
}

void RowQ5_1(const BlockQ5_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = Fp16ToFp32(b[i].d);
    const float m = Fp16ToFp32(b[i].m);
    const uint32_t qh = LoadQh(b[i].qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b[i].qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1) << 4);
      const int hi = (b[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
      y[j] = static_cast<float>(lo) * d + m;
      y[j + kQK / 2] = static_cast<float>(hi) * d + m;
    }
  }
}

void RowQ8_0(const BlockQ8_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = Fp16ToFp32(b[i].d);
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void RowQ4_K(const BlockQ4_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    const float dmin = Fp16ToFp32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int g = 0; g < 4; ++g, q += 32) {
      uint8_t sc, m;
      UnpackScaleMinK4(b[i].scales, 2 * g, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      UnpackScaleMinK4(b[i].scales, 2 * g + 1, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void RowQ5_K(const BlockQ5_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    const float dmin = Fp16ToFp32(b[i].dmin);
    const uint8_t* ql = b[i].qs;
    const uint8_t* qh = b[i].qh;
    for (int g = 0; g < 4; ++g, ql += 32) {
      uint8_t sc, m;
      UnpackScaleMinK4(b[i].scales, 2 * g, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      UnpackScaleMinK4(b[i].scales, 2 * g + 1, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      const uint8_t u1 = static_cast<uint8_t>(1 << (2 * g));
      const uint8_t u2 = static_cast<uint8_t>(2 << (2 * g));
      for (int l = 0; l < 32; ++l) {
        *y++ = d1 * static_cast<float>((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
      }
    }
  }
}

void RowQ6_K(const BlockQ6_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is] * static_cast<float>(q1);
        y[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
        y[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
        y[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
      }
    }
  }
}

void RowQ8_K(const BlockQ8_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK_K) {
    for (int j = 0; j < kQK_K; ++j) y[j] = b[i].d * static_cast<float>(b[i].qs[j]);
  }
}

template <typename Block>
const Block* BlocksOf(const void* p) {
  return static_cast<const Block*>(p);
}

}  // namespace

bool CanDequantize(TensorType type) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
    case TensorType::kQ8_0:
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K:
    case TensorType::kQ8_K:
      return true;
    default:
      return false;
  }
}

void DequantizeRow(TensorType type, const void* src, float* dst, int64_t n) {
  SWIFTLET_CHECK(CanDequantize(type));
  const int64_t block = BlockElems(type);
  SWIFTLET_CHECK(n >= 0 && n % block == 0);
  const int64_t nb = n / block;
  switch (type) {
    case TensorType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case TensorType::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = Fp16ToFp32(h[i]);
      return;
    }
    case TensorType::kBF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToFp32(h[i]);
      return;
    }
    case TensorType::kQ4_0: return RowQ4_0(BlocksOf<BlockQ4_0>(src), dst, nb);
    case TensorType::kQ4_1: return RowQ4_1(BlocksOf<BlockQ4_1>(src), dst, nb);
    case TensorType::kQ5_0: return RowQ5_0(BlocksOf<BlockQ5_0>(src), dst, nb);
    case TensorType::kQ5_1: return RowQ5_1(BlocksOf<BlockQ5_1>(src), dst, nb);
    case TensorType::kQ8_0: return RowQ8_0(BlocksOf<BlockQ8_0>(src), dst, nb);
    case TensorType::kQ4_K: return RowQ4_K(BlocksOf<BlockQ4_K>(src), dst, nb);
    case TensorType::kQ5_K: return RowQ5_K(BlocksOf<BlockQ5_K>(src), dst, nb);
    case TensorType::kQ6_K: return RowQ6_K(BlocksOf<BlockQ6_K>(src), dst, nb);
    case TensorType::kQ8_K: return RowQ8_K(BlocksOf<BlockQ8_K>(src), dst, nb);
    default: SWIFTLET_CHECK(false);
  }
}

}  // namespace swiftlet
