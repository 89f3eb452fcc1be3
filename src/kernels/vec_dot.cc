#include "kernels/vec_dot.h"

#include <cstring>

#include "core/check.h"
#include "kernels/dequantize.h"
#include "kernels/float16.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot_variants.h"

namespace swiftlet {
namespace {

float DotF32(const float* w, const float* x, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += w[i] * x[i];
  return sum;
}

float DotF16(const uint16_t* w, const float* x, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += Fp16ToFp32(w[i]) * x[i];
  return sum;
}

float DotBF16(const uint16_t* w, const float* x, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += Bf16ToFp32(w[i]) * x[i];
  return sum;
}

float DotQ8_0(const BlockQ8_0* w, const BlockQ8_0* a, int64_t nb) {
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int s = 0;
    for (int j = 0; j < kQK; ++j) s += w[b].qs[j] * a[b].qs[j];
    sum += static_cast<float>(s) * (Fp16ToFp32(w[b].d) * Fp16ToFp32(a[b].d));
  }
  return sum;
}

float DotQ4_0(const BlockQ4_0* w, const BlockQ8_0* a, int64_t nb) {
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int s = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      s += ((w[b].qs[j] & 0xF) - 8) * a[b].qs[j];
      s += ((w[b].qs[j] >> 4) - 8) * a[b].qs[j + kQK / 2];
    }
    sum += static_cast<float>(s) * (Fp16ToFp32(w[b].d) * Fp16ToFp32(a[b].d));
  }
  return sum;
}

int SumQ8(const BlockQ8_0& a) {
  int s = 0;
  for (int j = 0; j < kQK; ++j) s += a.qs[j];
  return s;
}

// x = q*d + m: dot = d*da*Σ q*qa + m*da*Σ qa.
float DotQ4_1(const BlockQ4_1* w, const BlockQ8_0* a, int64_t nb) {
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int s = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      s += (w[b].qs[j] & 0xF) * a[b].qs[j];
      s += (w[b].qs[j] >> 4) * a[b].qs[j + kQK / 2];
    }
    const float da = Fp16ToFp32(a[b].d);
    sum += static_cast<float>(s) * (Fp16ToFp32(w[b].d) * da) +
           Fp16ToFp32(w[b].m) * (da * static_cast<float>(SumQ8(a[b])));
  }
  return sum;
}

template <typename Block>
int Q5Sum(const Block& w, const BlockQ8_0& a, int offset) {
  uint32_t qh;
  std::memcpy(&qh, w.qh, 4);
  int s = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    const int lo = (w.qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1) << 4);
    const int hi = (w.qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    s += (lo - offset) * a.qs[j] + (hi - offset) * a.qs[j + kQK / 2];
  }
  return s;
}

float DotQ5_0(const BlockQ5_0* w, const BlockQ8_0* a, int64_t nb) {
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    sum += static_cast<float>(Q5Sum(w[b], a[b], 16)) * (Fp16ToFp32(w[b].d) * Fp16ToFp32(a[b].d));
  }
  return sum;
}

float DotQ5_1(const BlockQ5_1* w, const BlockQ8_0* a, int64_t nb) {
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    const float da = Fp16ToFp32(a[b].d);
    sum += static_cast<float>(Q5Sum(w[b], a[b], 0)) * (Fp16ToFp32(w[b].d) * da) +
           Fp16ToFp32(w[b].m) * (da * static_cast<float>(SumQ8(a[b])));
  }
  return sum;
}

// Q4_K / Q5_K: value = d*sc*q - dmin*m, so per super-block
// dot = d*da*Σ_j sc_j Σ q*qa  -  dmin*da*Σ_j m_j Σ qa (Σ qa from bsums).
template <typename Block, bool kFifthBit>
float DotKAffine(const Block* w, const BlockQ8_K* a, int64_t nb) {
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int sumi = 0, summ = 0;
    for (int g = 0; g < 4; ++g) {
      for (int half = 0; half < 2; ++half) {
        const int j = 2 * g + half;
        uint8_t sc, m;
        UnpackScaleMinK4(w[b].scales, j, &sc, &m);
        int s = 0;
        for (int l = 0; l < 32; ++l) {
          int q = half ? (w[b].qs[32 * g + l] >> 4) : (w[b].qs[32 * g + l] & 0xF);
          if constexpr (kFifthBit) q |= ((w[b].qh[l] >> j) & 1) << 4;
          s += q * a[b].qs[32 * j + l];
        }
        sumi += sc * s;
        summ += m * (a[b].bsums[2 * j] + a[b].bsums[2 * j + 1]);
      }
    }
    const float d = Fp16ToFp32(w[b].d) * a[b].d;
    const float dmin = Fp16ToFp32(w[b].dmin) * a[b].d;
    sum += d * static_cast<float>(sumi) - dmin * static_cast<float>(summ);
  }
  return sum;
}

float DotQ6_K(const BlockQ6_K* w, const BlockQ8_K* a, int64_t nb) {
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int sumi = 0;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = w[b].ql + 64 * half;
      const uint8_t* qh = w[b].qh + 32 * half;
      const int8_t* sc = w[b].scales + 8 * half;
      const int8_t* qa = a[b].qs + 128 * half;
      int s[8] = {0};
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        s[is + 0] += (((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32) * qa[l];
        s[is + 2] += (((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32) * qa[l + 32];
        s[is + 4] += (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32) * qa[l + 64];
        s[is + 6] += (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32) * qa[l + 96];
      }
      for (int j = 0; j < 8; ++j) sumi += sc[j] * s[j];
    }
    sum += Fp16ToFp32(w[b].d) * a[b].d * static_cast<float>(sumi);
  }
  return sum;
}

template <typename T>
const T* As(const void* p) {
  return static_cast<const T*>(p);
}

}  // namespace

TensorType ActivationTypeFor(TensorType weight_type) {
  switch (weight_type) {
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
    case TensorType::kQ8_0:
      return TensorType::kQ8_0;
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K:
      return TensorType::kQ8_K;
    default:
      return TensorType::kF32;
  }
}

// Q8_K is an activation format only; every other readable type is a weight.
bool CanMatMul(TensorType t) { return CanDequantize(t) && t != TensorType::kQ8_K; }

float VecDotScalar(TensorType type, const void* w, const void* a, int64_t n) {
  const int64_t nb = n / BlockElems(type);
  switch (type) {
    case TensorType::kF32: return DotF32(As<float>(w), As<float>(a), n);
    case TensorType::kF16: return DotF16(As<uint16_t>(w), As<float>(a), n);
    case TensorType::kBF16: return DotBF16(As<uint16_t>(w), As<float>(a), n);
    case TensorType::kQ8_0: return DotQ8_0(As<BlockQ8_0>(w), As<BlockQ8_0>(a), nb);
    case TensorType::kQ4_0: return DotQ4_0(As<BlockQ4_0>(w), As<BlockQ8_0>(a), nb);
    case TensorType::kQ4_1: return DotQ4_1(As<BlockQ4_1>(w), As<BlockQ8_0>(a), nb);
    case TensorType::kQ5_0: return DotQ5_0(As<BlockQ5_0>(w), As<BlockQ8_0>(a), nb);
    case TensorType::kQ5_1: return DotQ5_1(As<BlockQ5_1>(w), As<BlockQ8_0>(a), nb);
    case TensorType::kQ4_K:
      return DotKAffine<BlockQ4_K, false>(As<BlockQ4_K>(w), As<BlockQ8_K>(a), nb);
    case TensorType::kQ5_K:
      return DotKAffine<BlockQ5_K, true>(As<BlockQ5_K>(w), As<BlockQ8_K>(a), nb);
    case TensorType::kQ6_K: return DotQ6_K(As<BlockQ6_K>(w), As<BlockQ8_K>(a), nb);
    default: SWIFTLET_CHECK(false && "unsupported weight type");
  }
  return 0;
}

}  // namespace swiftlet

namespace swiftlet {
namespace {

// Null also for an ISA this CPU lacks: even a variant's table lookup is
// code compiled with that ISA's flags.
VecDotFn SimdFor(KernelIsa isa, TensorType t) {
  if (!CpuSupports(isa)) return nullptr;
  switch (isa) {
    case KernelIsa::kAvx512Vnni: return VecDotAvx512Vnni(t);
    case KernelIsa::kAvxVnni: return VecDotAvxVnni(t);
    // No 512-bit-only variant: AVX2's serves (never AVX-VNNI's, which
    // AVX-512 CPUs such as Skylake-SP and Ice Lake lack).
    case KernelIsa::kAvx512:
    case KernelIsa::kAvx2: return VecDotAvx2(t);
    case KernelIsa::kScalar: return nullptr;
  }
  return nullptr;
}

// Scalar entry points per type, so the table holds plain function pointers.
template <TensorType kType>
float ScalarOf(const void* w, const void* a, int64_t n) {
  return VecDotScalar(kType, w, a, n);
}

VecDotFn ScalarFor(TensorType t) {
  switch (t) {
    case TensorType::kF32: return ScalarOf<TensorType::kF32>;
    case TensorType::kF16: return ScalarOf<TensorType::kF16>;
    case TensorType::kBF16: return ScalarOf<TensorType::kBF16>;
    case TensorType::kQ4_0: return ScalarOf<TensorType::kQ4_0>;
    case TensorType::kQ4_1: return ScalarOf<TensorType::kQ4_1>;
    case TensorType::kQ5_0: return ScalarOf<TensorType::kQ5_0>;
    case TensorType::kQ5_1: return ScalarOf<TensorType::kQ5_1>;
    case TensorType::kQ8_0: return ScalarOf<TensorType::kQ8_0>;
    case TensorType::kQ4_K: return ScalarOf<TensorType::kQ4_K>;
    case TensorType::kQ5_K: return ScalarOf<TensorType::kQ5_K>;
    case TensorType::kQ6_K: return ScalarOf<TensorType::kQ6_K>;
    default: return nullptr;
  }
}

constexpr size_t kTableSize = 32;  // GGUF type ids in use are below 32.

// The table VecDot dispatches through, built once from CPUID.
struct DispatchTable {
  VecDotFn fn[kTableSize] = {};
  DispatchTable() {
    const KernelIsa isa = ChosenKernelIsa();
    for (size_t id = 0; id < kTableSize; ++id) {
      const TensorTypeInfo* info = FindTensorTypeInfo(static_cast<uint32_t>(id));
      if (info == nullptr || !CanMatMul(info->type)) continue;
      fn[id] = VecDotFor(isa, info->type);
    }
  }
};

}  // namespace

bool HasSimdVecDot(KernelIsa isa, TensorType t) { return SimdFor(isa, t) != nullptr; }

VecDotFnPtr VecDotFor(KernelIsa isa, TensorType t) {
  VecDotFn simd = SimdFor(isa, t);
  return simd != nullptr ? simd : ScalarFor(t);
}

float VecDot(TensorType type, const void* w, const void* a, int64_t n) {
  static const DispatchTable table;
  const auto id = static_cast<size_t>(type);
  SWIFTLET_CHECK(id < kTableSize && table.fn[id] != nullptr);
  return table.fn[id](w, a, n);
}

}  // namespace swiftlet
