// GgufBytes: writes GGUF header fields one by one, exactly as given, so tests
// can build valid files and malformed ones independently of GgufWriter.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace swiftlet::testing {

class GgufBytes {
 public:
  GgufBytes& U8(uint8_t v) { return Raw(&v, 1); }
  GgufBytes& U32(uint32_t v) { return Raw(&v, 4); }
  GgufBytes& U64(uint64_t v) { return Raw(&v, 8); }
  GgufBytes& F32(float v) { return Raw(&v, 4); }
  GgufBytes& Str(std::string_view s) {
    U64(s.size());
    return Raw(s.data(), s.size());
  }
  GgufBytes& Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
  }
  GgufBytes& PadTo(size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
    return *this;
  }
  // Header start: magic, version, tensor count, metadata count.
  GgufBytes& Preamble(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return U32(0x46554747).U32(version).U64(n_tensors).U64(n_kv);
  }
  // One tensor info: name, dims (ne[0] first), type, offset.
  GgufBytes& TensorInfo(std::string_view name, std::vector<uint64_t> dims,
                        uint32_t type, uint64_t offset) {
    Str(name).U32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) U64(d);
    return U32(type).U64(offset);
  }
  size_t size() const { return bytes_.size(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace swiftlet::testing
