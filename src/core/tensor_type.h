// Tensor element types, numbered as GGUF numbers them, and their block
// geometry: every layer that sizes a tensor (the GGUF reader, the kernels,
// the quantizer) reads it from this one table. The block structs themselves
// live in kernels/quant_blocks.h, each tied to its entry here.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace swiftlet {

enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
};

struct TensorTypeInfo {
  TensorType type;
  std::string_view name;  // As GGUF tools print it: "Q4_K", "F16".
  uint32_t block_elems;   // Elements per block (1 for plain types).
  uint32_t block_bytes;   // Bytes per block.
};

// Block sizes follow the ggml block layouts (see kernels/quant_blocks.h for
// the structs that static_assert against these numbers).
inline constexpr std::array kTensorTypes = {
    TensorTypeInfo{TensorType::kF32, "F32", 1, 4},
    TensorTypeInfo{TensorType::kF16, "F16", 1, 2},
    TensorTypeInfo{TensorType::kQ4_0, "Q4_0", 32, 18},
    TensorTypeInfo{TensorType::kQ4_1, "Q4_1", 32, 20},
    TensorTypeInfo{TensorType::kQ5_0, "Q5_0", 32, 22},
    TensorTypeInfo{TensorType::kQ5_1, "Q5_1", 32, 24},
    TensorTypeInfo{TensorType::kQ8_0, "Q8_0", 32, 34},
    TensorTypeInfo{TensorType::kQ8_1, "Q8_1", 32, 36},
    TensorTypeInfo{TensorType::kQ2_K, "Q2_K", 256, 84},
    TensorTypeInfo{TensorType::kQ3_K, "Q3_K", 256, 110},
    TensorTypeInfo{TensorType::kQ4_K, "Q4_K", 256, 144},
    TensorTypeInfo{TensorType::kQ5_K, "Q5_K", 256, 176},
    TensorTypeInfo{TensorType::kQ6_K, "Q6_K", 256, 210},
    TensorTypeInfo{TensorType::kQ8_K, "Q8_K", 256, 292},
    TensorTypeInfo{TensorType::kIQ4_NL, "IQ4_NL", 32, 18},
    TensorTypeInfo{TensorType::kIQ4_XS, "IQ4_XS", 256, 136},
    TensorTypeInfo{TensorType::kI8, "I8", 1, 1},
    TensorTypeInfo{TensorType::kI16, "I16", 1, 2},
    TensorTypeInfo{TensorType::kI32, "I32", 1, 4},
    TensorTypeInfo{TensorType::kI64, "I64", 1, 8},
    TensorTypeInfo{TensorType::kF64, "F64", 1, 8},
    TensorTypeInfo{TensorType::kBF16, "BF16", 1, 2},
};

// Block geometry at compile time, for static_asserts on block structs.
constexpr uint32_t BlockElems(TensorType type) {
  for (const TensorTypeInfo& info : kTensorTypes) {
    if (info.type == type) return info.block_elems;
  }
  return 0;
}
constexpr uint32_t BlockBytes(TensorType type) {
  for (const TensorTypeInfo& info : kTensorTypes) {
    if (info.type == type) return info.block_bytes;
  }
  return 0;
}

// The entry for a raw GGUF type id, or nullptr if swiftlet does not know the
// id's block geometry (such a tensor cannot be sized, so files holding one
// are rejected).
const TensorTypeInfo* FindTensorTypeInfo(uint32_t id);

// The entry for a known type.
const TensorTypeInfo& InfoOf(TensorType type);
inline std::string_view NameOf(TensorType type) { return InfoOf(type).name; }

// Looks a type up by name, case-insensitively ("q8_0", "F16").
std::optional<TensorType> TensorTypeFromName(std::string_view name);

// Bytes that `n_elems` elements of `type` occupy. Fails when n_elems is not a
// whole number of blocks or the size overflows.
[[nodiscard]] bool RowBytes(TensorType type, uint64_t n_elems, uint64_t* out);

}  // namespace swiftlet
