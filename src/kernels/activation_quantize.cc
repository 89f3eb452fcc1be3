#include "kernels/activation_quantize.h"

#include "kernels/activation_quantize_variants.h"
#include "kernels/quantize.h"

namespace swiftlet {

const ActivationQuantizers& ActivationQuantizersFor(KernelIsa isa) {
  static const ActivationQuantizers scalar{QuantizeRowQ8_0, QuantizeRowQ8_K};
  switch (isa) {
    case KernelIsa::kAvx512Vnni:
    case KernelIsa::kAvx512: return ActivationQuantizersAvx512();
    case KernelIsa::kAvxVnni:
    case KernelIsa::kAvx2: return ActivationQuantizersAvx2();
    case KernelIsa::kScalar: break;
  }
  return scalar;
}

void QuantizeActivationRow(TensorType type, const float* x, void* dst, int64_t n) {
  static const ActivationQuantizers& chosen = ActivationQuantizersFor(ChosenKernelIsa());
  switch (type) {
    case TensorType::kQ8_0: return chosen.q8_0(x, static_cast<BlockQ8_0*>(dst), n);
    case TensorType::kQ8_K: return chosen.q8_k(x, static_cast<BlockQ8_K*>(dst), n);
    default: return QuantizeRow(type, x, dst, n);
  }
}

}  // namespace swiftlet
