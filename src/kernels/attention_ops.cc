#include "kernels/attention_ops.h"

#include "kernels/attention_ops_variants.h"
#include "kernels/float16.h"

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

}  // namespace

const AttentionOps& AttentionOpsScalar() {
  static const AttentionOps ops{Dot<float, Same>, Dot<uint16_t, Widen>, Axpy<float, Same>,
                                Axpy<uint16_t, Widen>};
  return ops;
}

const AttentionOps& AttentionOpsFor(KernelIsa isa, int64_t head_dim) {
  const bool wide = isa == KernelIsa::kAvx512 || isa == KernelIsa::kAvx512Vnni;
  if (wide && head_dim % 16 == 0) return AttentionOpsAvx512();
  return AttentionOpsScalar();
}

}  // namespace swiftlet
