#include "kernels/kv_row_encode.h"

#include <cstring>

#include "core/check.h"
#include "kernels/float16.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"

namespace swiftlet {

void EncodeKvRow(TensorType type, const float* x, int64_t kv_dim, uint8_t* out) {
  switch (type) {
    case TensorType::kF32:
      std::memcpy(out, x, static_cast<size_t>(kv_dim) * 4);
      return;
    case TensorType::kF16:
      Fp32ToFp16Row(x, reinterpret_cast<uint16_t*>(out), kv_dim);
      return;
    case TensorType::kQ8_0:
      QuantizeRowQ8_0(x, reinterpret_cast<BlockQ8_0*>(out), kv_dim);
      return;
    default:
      SWIFTLET_CHECK(false && "not a KV type");
  }
}

}  // namespace swiftlet
