#include "kernels/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "kernels/dequantize.h"
#include "kernels/float16.h"

namespace swiftlet {
namespace {

// Rounded to nearest even, clamped to [lo, hi]; NaN (a NaN or infinite
// input times a zero scale) gives lo, as the SIMD conversions' "integer
// indefinite" clamped does. Clamping in float first keeps the conversion
// defined for any input.
int RoundClamp(float v, int lo, int hi) {
  if (std::isnan(v)) return lo;
  return static_cast<int>(std::clamp(std::nearbyint(v), static_cast<float>(lo), static_cast<float>(hi)));
}

// The element of largest magnitude, with its sign.
float SignedMax(const float* x, int n) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  return max;
}

// Q4_0 / Q5_0: the extreme element maps to the most negative level, as the
// format's convention is; levels are 0..2*half-1 around `half`.
template <typename Block>
void QuantizeSymmetricOffset(const float* x, Block* y, int64_t nb, int half) {
  for (int64_t i = 0; i < nb; ++i, x += kQK) {
    const float max = SignedMax(x, kQK);
    const float d = max / static_cast<float>(-half);
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = Fp32ToFp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = std::min(2 * half - 1, static_cast<int>(x[j] * id + half + 0.5f));
      const int hi = std::min(2 * half - 1, static_cast<int>(x[j + kQK / 2] * id + half + 0.5f));
      y[i].qs[j] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      qh |= static_cast<uint32_t>((lo >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((hi >> 4) & 1) << (j + 16);
    }
    if constexpr (requires { y[i].qh; }) std::memcpy(y[i].qh, &qh, 4);
  }
}

// Q4_1 / Q5_1: x ≈ q * d + min over the block's range.
template <typename Block>
void QuantizeAffine(const float* x, Block* y, int64_t nb, int levels) {
  for (int64_t i = 0; i < nb; ++i, x += kQK) {
    float lo = x[0], hi = x[0];
    for (int j = 1; j < kQK; ++j) {
      lo = std::min(lo, x[j]);
      hi = std::max(hi, x[j]);
    }
    const float d = (hi - lo) / static_cast<float>(levels - 1);
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = Fp32ToFp16(d);
    y[i].m = Fp32ToFp16(lo);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int a = std::min(levels - 1, static_cast<int>((x[j] - lo) * id + 0.5f));
      const int b = std::min(levels - 1, static_cast<int>((x[j + kQK / 2] - lo) * id + 0.5f));
      y[i].qs[j] = static_cast<uint8_t>((a & 0xF) | ((b & 0xF) << 4));
      qh |= static_cast<uint32_t>((a >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((b >> 4) & 1) << (j + 16);
    }
    if constexpr (requires { y[i].qh; }) std::memcpy(y[i].qh, &qh, 4);
  }
}

// Best x ≈ scale * q - min with q in [0, qmax], min >= 0, for one sub-block.
// Tries a range of grid spacings; for each, rounds to the grid and solves
// the least-squares scale and offset for those integers; keeps the best.
void FitAffine(const float* x, int n, int qmax, float* scale, float* min) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  lo = std::min(lo, 0.0f);  // The stored min is non-negative: offset <= 0.
  if (hi <= lo) {
    *scale = 0;
    *min = -lo;
    return;
  }
  float best_err = INFINITY;
  *scale = (hi - lo) / static_cast<float>(qmax);
  *min = -lo;
  for (int step = -10; step <= 10; ++step) {
    const float iscale = (static_cast<float>(qmax) + 0.1f * static_cast<float>(step)) / (hi - lo);
    double sq = 0, sx = 0, sqq = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      const int q = RoundClamp(iscale * (x[i] - lo), 0, qmax);
      sq += q;
      sx += x[i];
      sqq += static_cast<double>(q) * q;
      sqx += static_cast<double>(q) * x[i];
    }
    const double det = n * sqq - sq * sq;
    if (det <= 0) continue;
    double s = (n * sqx - sq * sx) / det;
    double b = (sx - s * sq) / n;
    if (b > 0) {  // Offset must be <= 0: refit the scale through the origin.
      b = 0;
      s = sqq > 0 ? sqx / sqq : 0;
    }
    if (s <= 0) continue;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const int q = RoundClamp(static_cast<float>((x[i] - b) / s), 0, qmax);
      const double e = s * q + b - x[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = static_cast<float>(err);
      *scale = static_cast<float>(s);
      *min = static_cast<float>(-b);
    }
  }
}

// Best x ≈ scale * q with q in [-nmax, nmax - 1], for one sub-block (Q6_K).
float FitSymmetric(const float* x, int n, int nmax) {
  const float max = SignedMax(x, n);
  if (max == 0) return 0;
  float best_scale = max / static_cast<float>(-nmax);
  double best_err = INFINITY;
  for (int step = -9; step <= 9; ++step) {
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
    double sqq = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      const int q = RoundClamp(iscale * x[i], -nmax, nmax - 1);
      sqq += static_cast<double>(q) * q;
      sqx += static_cast<double>(q) * x[i];
    }
    if (sqq <= 0) continue;
    const double s = sqx / sqq;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const int q = RoundClamp(static_cast<float>(x[i] / s), -nmax, nmax - 1);
      const double e = s * q - x[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_scale = static_cast<float>(s);
    }
  }
  return best_scale;
}

// Packs 6-bit scales and mins into the 12 bytes UnpackScaleMinK4 reads.
void PackScaleMinK4(const uint8_t* sc, const uint8_t* m, uint8_t* out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

// Shared by Q4_K (qmax 15) and Q5_K (qmax 31): fits each sub-block, stores
// the 6-bit scales and mins, and returns the final integers in `q`.
template <typename Block>
void QuantizeKAffine(const float* x, Block& y, int qmax, uint8_t* q) {
  float scales[8], mins[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    FitAffine(x + 32 * j, 32, qmax, &scales[j], &mins[j]);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float d = max_scale / 63.0f;
  const float dmin = max_min / 63.0f;
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(d > 0 ? RoundClamp(scales[j] / d, 0, 63) : 0);
    m[j] = static_cast<uint8_t>(dmin > 0 ? RoundClamp(mins[j] / dmin, 0, 63) : 0);
  }
  PackScaleMinK4(sc, m, y.scales);
  y.d = Fp32ToFp16(d);
  y.dmin = Fp32ToFp16(dmin);
  // Requantize against the scales as stored, so rounding them costs least.
  const float d_stored = Fp16ToFp32(y.d);
  const float dmin_stored = Fp16ToFp32(y.dmin);
  for (int j = 0; j < 8; ++j) {
    const float s = d_stored * sc[j];
    const float mn = dmin_stored * m[j];
    for (int l = 0; l < 32; ++l) {
      q[32 * j + l] = static_cast<uint8_t>(s > 0 ? RoundClamp((x[32 * j + l] + mn) / s, 0, qmax) : 0);
    }
  }
}

void QuantizeRowQ4_K(const float* x, BlockQ4_K* y, int64_t nb) {
  uint8_t q[kQK_K];
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    QuantizeKAffine(x, y[i], 15, q);
    for (int g = 0; g < 4; ++g) {
      for (int l = 0; l < 32; ++l) {
        y[i].qs[32 * g + l] = static_cast<uint8_t>(q[64 * g + l] | (q[64 * g + 32 + l] << 4));
      }
    }
  }
}

void QuantizeRowQ5_K(const float* x, BlockQ5_K* y, int64_t nb) {
  uint8_t q[kQK_K];
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    QuantizeKAffine(x, y[i], 31, q);
    std::memset(y[i].qh, 0, sizeof(y[i].qh));
    for (int g = 0; g < 4; ++g) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t a = q[64 * g + l], b = q[64 * g + 32 + l];
        y[i].qs[32 * g + l] = static_cast<uint8_t>((a & 0xF) | ((b & 0xF) << 4));
        y[i].qh[l] |= static_cast<uint8_t>(((a >> 4) << (2 * g)) | ((b >> 4) << (2 * g + 1)));
      }
    }
  }
}

void QuantizeRowQ6_K(const float* x, BlockQ6_K* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = FitSymmetric(x + 16 * j, 16, 32);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    // int8 sub-scales; the largest maps to -128 or 127 by its sign.
    const float d = max_scale / -128.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    for (int j = 0; j < 16; ++j) {
      y[i].scales[j] = static_cast<int8_t>(RoundClamp(scales[j] * id, -128, 127));
    }
    y[i].d = Fp32ToFp16(d);
    const float d_stored = Fp16ToFp32(y[i].d);
    uint8_t q[kQK_K];
    for (int j = 0; j < 16; ++j) {
      const float s = d_stored * y[i].scales[j];
      for (int l = 0; l < 16; ++l) {
        q[16 * j + l] = static_cast<uint8_t>(
            (s != 0 ? RoundClamp(x[16 * j + l] / s, -32, 31) : 0) + 32);
      }
    }
    // Each 128-element half: ql[l] holds elements l (low) and l + 64 (high),
    // ql[l + 32] elements l + 32 and l + 96; qh[l] their top 2 bits.
    for (int half = 0; half < 2; ++half) {
      uint8_t* ql = y[i].ql + 64 * half;
      uint8_t* qh = y[i].qh + 32 * half;
      const uint8_t* qq = q + 128 * half;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((qq[l] & 0xF) | ((qq[l + 64] & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((qq[l + 32] & 0xF) | ((qq[l + 96] & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((qq[l] >> 4) | ((qq[l + 32] >> 4) << 2) |
                                     ((qq[l + 64] >> 4) << 4) | ((qq[l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace

void QuantizeRowQ8_0(const float* x, BlockQ8_0* y, int64_t n) {
  SWIFTLET_CHECK(n % kQK == 0);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = Fp32ToFp16(d);
    for (int j = 0; j < kQK; ++j) y[i].qs[j] = static_cast<int8_t>(RoundClamp(x[j] * id, -127, 127));
  }
}

void QuantizeRowQ8_K(const float* x, BlockQ8_K* y, int64_t n) {
  SWIFTLET_CHECK(n % kQK_K == 0);
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    float amax = 0;
    for (int j = 0; j < kQK_K; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float iscale = amax != 0 ? 127.0f / amax : 0.0f;
    y[i].d = amax != 0 ? 1.0f / iscale : 0.0f;
    for (int j = 0; j < kQK_K; ++j) y[i].qs[j] = static_cast<int8_t>(RoundClamp(x[j] * iscale, -127, 127));
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += y[i].qs[16 * g + l];
      y[i].bsums[g] = static_cast<int16_t>(sum);
    }
  }
}

// Every type swiftlet can read it can also write.
bool CanQuantize(TensorType type) { return CanDequantize(type); }

void QuantizeRow(TensorType type, const float* src, void* dst, int64_t n) {
  SWIFTLET_CHECK(CanQuantize(type));
  const int64_t block = BlockElems(type);
  SWIFTLET_CHECK(n >= 0 && n % block == 0);
  const int64_t nb = n / block;
  switch (type) {
    case TensorType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case TensorType::kF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = Fp32ToFp16(src[i]);
      return;
    }
    case TensorType::kBF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = Fp32ToBf16(src[i]);
      return;
    }
    case TensorType::kQ4_0:
      return QuantizeSymmetricOffset(src, static_cast<BlockQ4_0*>(dst), nb, 8);
    case TensorType::kQ5_0:
      return QuantizeSymmetricOffset(src, static_cast<BlockQ5_0*>(dst), nb, 16);
    case TensorType::kQ4_1:
      return QuantizeAffine(src, static_cast<BlockQ4_1*>(dst), nb, 16);
    case TensorType::kQ5_1:
      return QuantizeAffine(src, static_cast<BlockQ5_1*>(dst), nb, 32);
    case TensorType::kQ8_0: return QuantizeRowQ8_0(src, static_cast<BlockQ8_0*>(dst), n);
    case TensorType::kQ4_K: return QuantizeRowQ4_K(src, static_cast<BlockQ4_K*>(dst), nb);
    case TensorType::kQ5_K: return QuantizeRowQ5_K(src, static_cast<BlockQ5_K*>(dst), nb);
    case TensorType::kQ6_K: return QuantizeRowQ6_K(src, static_cast<BlockQ6_K*>(dst), nb);
    case TensorType::kQ8_K: return QuantizeRowQ8_K(src, static_cast<BlockQ8_K*>(dst), n);
    default: SWIFTLET_CHECK(false);
  }
}

}  // namespace swiftlet
