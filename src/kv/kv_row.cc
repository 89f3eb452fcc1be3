#include "kv/kv_row.h"

#include "kernels/quant_blocks.h"

namespace swiftlet {

size_t KvRowBytes(TensorType type, int64_t kv_dim) {
  if (kv_dim <= 0) return 0;
  const auto n = static_cast<size_t>(kv_dim);
  switch (type) {
    case TensorType::kF32: return n * 4;
    case TensorType::kF16: return n * 2;
    case TensorType::kQ8_0:
      return kv_dim % BlockQ8_0::kElems == 0 ? n / BlockQ8_0::kElems * sizeof(BlockQ8_0) : 0;
    default: return 0;
  }
}

const char* KvTypeProblem(TensorType type, int64_t head_dim) {
  if (type != TensorType::kF32 && type != TensorType::kF16 && type != TensorType::kQ8_0) {
    return "a KV cache holds f32, f16 or q8_0";
  }
  if (type == TensorType::kQ8_0 && head_dim % BlockQ8_0::kElems != 0) {
    return "a q8_0 KV cache needs a head dimension that is a multiple of 32";
  }
  return "";
}

}  // namespace swiftlet
