// Device helpers the CUDA backend's kernels share: half and bf16 bits to
// float, a warp's butterfly sum, Q8_0 quantization by a warp, a row's
// elements by type, and a KV cache row's address. For .cu files only.
#pragma once

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "core/tensor_type.h"
#include "kernels/backend.h"
#include "kernels/quant_blocks.h"

namespace swiftlet::cuda_device {

inline constexpr int kWarp = 32;

// Blocks of `threads` that cover n threads.
inline int Blocks(int64_t n, int threads) { return static_cast<int>((n + threads - 1) / threads); }

inline __device__ float Half(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
inline __device__ float Bf16(uint16_t bits) { return __uint_as_float(static_cast<uint32_t>(bits) << 16); }

inline __device__ float WarpSum(float v) {
  // A butterfly: every lane ends with the same sum, in the same order
  // whatever the batch.
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// A lane's element x of a block of 32 quantized as QuantizeRowQ8_0
// quantizes it (d = max|x| / 127, q = round(x · (1 / d)) within ±127, the
// same IEEE operations); every lane of the warp joins, and all get d's F16
// bits.
inline __device__ int8_t QuantizeLaneQ8(float x, uint16_t* d_bits) {
  // From 0, as the CPU's max: NaN never becomes the maximum (fmaxf drops
  // it), so a block of NaN gets d = 0 there too.
  float amax = fmaxf(0.0f, fabsf(x));
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  }
  const float d = amax / 127.0f;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  *d_bits = __half_as_ushort(__float2half_rn(d));
  return static_cast<int8_t>(fminf(fmaxf(rintf(x * id), -127.0f), 127.0f));
}

// Element i of a row of kType (F32, F16, BF16 or Q8_0), one at a time:
// attention's cache rows, and float weights whose rows are not a whole
// number of slices.
template <TensorType kType>
__device__ float ElementOf(const uint8_t* row, int64_t i) {
  if constexpr (kType == TensorType::kF16) {
    return Half(reinterpret_cast<const uint16_t*>(row)[i]);
  } else if constexpr (kType == TensorType::kBF16) {
    return Bf16(reinterpret_cast<const uint16_t*>(row)[i]);
  } else if constexpr (kType == TensorType::kQ8_0) {
    const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[i / BlockQ8_0::kElems];
    return Half(b.d) * static_cast<float>(b.qs[i % BlockQ8_0::kElems]);
  } else {
    static_assert(kType == TensorType::kF32);
    return reinterpret_cast<const float*>(row)[i];
  }
}

// The same for a type known only at run time.
inline __device__ float Element(TensorType type, const uint8_t* row, int64_t i) {
  switch (type) {
    case TensorType::kF16: return ElementOf<TensorType::kF16>(row, i);
    case TensorType::kBF16: return ElementOf<TensorType::kBF16>(row, i);
    case TensorType::kQ8_0: return ElementOf<TensorType::kQ8_0>(row, i);
    default: return ElementOf<TensorType::kF32>(row, i);
  }
}

// Row j of batch row t's sequence in a KV cache layer (its block table),
// at `offset` (the K or the V part).
inline __device__ uint8_t* KvRow(const KvBatch& kv, int64_t t, int64_t j, size_t offset) {
  const KvLayer& l = kv.layer;
  const int32_t block = kv.tables[kv.table_start[t] + j / l.block_rows];
  return l.base + static_cast<size_t>(block) * l.block_stride + offset +
         static_cast<size_t>(j % l.block_rows) * l.row_bytes;
}

}  // namespace swiftlet::cuda_device
