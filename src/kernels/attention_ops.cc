#include "kernels/attention_ops.h"

#include "kernels/attention_ops_variants.h"
#include "kernels/float16.h"
#include "kernels/kernel_exp.h"

namespace swiftlet {
namespace {

template <typename K, float (*kWiden)(K)>
float Dot(const float* q, const K* k, int64_t n) {
  float lanes[16] = {};
  for (int64_t i = 0; i < n; ++i) lanes[i % 16] += q[i] * kWiden(k[i]);
  for (int width = 8; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  }
  return lanes[0];
}

template <typename V, float (*kWiden)(V)>
void Axpy(float* acc, float p, const V* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += p * kWiden(v[i]);
}

float Same(float x) { return x; }
float Widen(uint16_t h) { return Fp16ToFp32(h); }

// Element i of a Q8_0 row: its block's scale times its int8 (exact).
float Q8At(const BlockQ8_0* row, int64_t i) {
  const BlockQ8_0& b = row[i / BlockQ8_0::kElems];
  return Fp16ToFp32(b.d) * static_cast<float>(b.qs[i % BlockQ8_0::kElems]);
}

float DotQ8(const float* q, const BlockQ8_0* k, int64_t n) {
  float lanes[16] = {};
  for (int64_t i = 0; i < n; ++i) lanes[i % 16] += q[i] * Q8At(k, i);
  for (int width = 8; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  }
  return lanes[0];
}

void AxpyQ8(float* acc, float p, const BlockQ8_0* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += p * Q8At(v, i);
}

// The group ops of the specification: the single-head op once per head.
template <typename K, float (*kDot)(const float*, const K*, int64_t)>
void DotGroup(const float* q, int64_t group, const K* k, int64_t n, float* out) {
  for (int64_t h = 0; h < group; ++h) out[h] = kDot(q + h * n, k, n);
}

template <typename V, void (*kAxpy)(float*, float, const V*, int64_t)>
void AxpyRows(float* acc, int64_t group, const float* p, const V* const* v, int64_t rows, int64_t n) {
  for (int64_t j = 0; j < rows; ++j) {
    for (int64_t h = 0; h < group; ++h) kAxpy(acc + h * n, p[j * group + h], v[j], n);
  }
}

float SoftmaxWeights(float* s, int64_t n, float max) {
  float lanes[16] = {};
  for (int64_t j = 0; j < n; ++j) lanes[j % 16] += (s[j] = SoftmaxWeight(s[j] - max));
  for (int width = 8; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  }
  return lanes[0];
}

}  // namespace

float SoftmaxWeight(float x) { return x < kernel_exp_internal::kMinX ? 0.0f : KernelExp(x); }

const AttentionOps& AttentionOpsScalar() {
  static const AttentionOps ops{Dot<float, Same>,
                                Dot<uint16_t, Widen>,
                                Axpy<float, Same>,
                                Axpy<uint16_t, Widen>,
                                DotQ8,
                                AxpyQ8,
                                DotGroup<float, Dot<float, Same>>,
                                DotGroup<uint16_t, Dot<uint16_t, Widen>>,
                                DotGroup<BlockQ8_0, DotQ8>,
                                AxpyRows<float, Axpy<float, Same>>,
                                AxpyRows<uint16_t, Axpy<uint16_t, Widen>>,
                                AxpyRows<BlockQ8_0, AxpyQ8>,
                                SoftmaxWeights};
  return ops;
}

const AttentionOps& AttentionOpsFor(KernelIsa isa, int64_t head_dim) {
  if (head_dim % 16 != 0) return AttentionOpsScalar();
  switch (isa) {
    case KernelIsa::kAvx512Vnni:
    case KernelIsa::kAvx512: return AttentionOpsAvx512();
    case KernelIsa::kAvxVnni:
    case KernelIsa::kAvx2: return AttentionOpsAvx2();
    case KernelIsa::kScalar: break;
  }
  return AttentionOpsScalar();
}

}  // namespace swiftlet
