#include "core/tensor_type.h"

#include "core/check.h"
#include "core/checked_math.h"

namespace swiftlet {

const TensorTypeInfo* FindTensorTypeInfo(uint32_t id) {
  for (const TensorTypeInfo& info : kTensorTypes) {
    if (static_cast<uint32_t>(info.type) == id) return &info;
  }
  return nullptr;
}

const TensorTypeInfo& InfoOf(TensorType type) {
  const TensorTypeInfo* info = FindTensorTypeInfo(static_cast<uint32_t>(type));
  SWIFTLET_CHECK(info != nullptr);
  return *info;
}

namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace

std::optional<TensorType> TensorTypeFromName(std::string_view name) {
  for (const TensorTypeInfo& info : kTensorTypes) {
    if (EqualsIgnoreCase(info.name, name)) return info.type;
  }
  return std::nullopt;
}

bool RowBytes(TensorType type, uint64_t n_elems, uint64_t* out) {
  const TensorTypeInfo& info = InfoOf(type);
  if (n_elems % info.block_elems != 0) return false;
  return CheckedMul(n_elems / info.block_elems, info.block_bytes, out);
}

}  // namespace swiftlet
