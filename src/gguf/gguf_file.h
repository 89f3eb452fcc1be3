// A GGUF model file (format versions 2 and 3), read in place.
//
// Open() maps the file and validates all of it before returning: every count,
// length, type, shape, offset and alignment in the header is checked with
// overflow-safe arithmetic against the bytes actually present, so a GgufFile
// that exists describes only tensors whose bytes lie inside the file and do
// not overlap. Tensor data is never copied: GgufTensor::data points into the
// mapping, which lives as long as the GgufFile. Immutable after Open(), so
// one GgufFile may be shared by any number of threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/mapped_file.h"
#include "core/status.h"
#include "core/tensor_type.h"
#include "gguf/gguf_value.h"

namespace swiftlet {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian.
inline constexpr uint64_t kGgufDefaultAlignment = 32;
inline constexpr int kGgufMaxDims = 4;

struct GgufTensor {
  std::string name;
  TensorType type = TensorType::kF32;
  int n_dims = 0;
  // ne[0] is the innermost dimension (a row); unused dimensions are 1.
  std::array<int64_t, kGgufMaxDims> ne = {1, 1, 1, 1};
  uint64_t n_elements = 0;
  uint64_t offset = 0;  // From the start of the data section.
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // Into the file's mapping.

  std::span<const uint8_t> bytes() const { return {data, n_bytes}; }
  int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
};

struct GgufKv {
  std::string key;
  GgufValue value;
};

class GgufFile {
 public:
  // Maps and validates `path`. Errors start with the path.
  static absl::StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);

  // Validates bytes the caller keeps alive for the GgufFile's lifetime
  // (fuzzing and tests). `name` prefixes error messages.
  static absl::StatusOr<std::unique_ptr<GgufFile>> Parse(
      std::span<const uint8_t> bytes, std::string name);

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return bytes_.size(); }

  const std::vector<GgufKv>& metadata() const { return metadata_; }
  const GgufValue* Find(std::string_view key) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* FindTensor(std::string_view name) const;

  // MappedFile::DropPages for bytes of this file (no-op when parsed from a
  // buffer).
  void DropPages(const uint8_t* p, size_t n) const {
    if (mapping_ != nullptr) mapping_->DropPages(p, n);
  }

  // Typed metadata lookups. NotFound names a missing key; InvalidArgument
  // names a key whose stored type does not fit. GetInt accepts any integer
  // type, GetFloat any number.
  absl::StatusOr<int64_t> GetInt(std::string_view key) const;
  absl::StatusOr<double> GetFloat(std::string_view key) const;
  absl::StatusOr<std::string> GetString(std::string_view key) const;
  absl::StatusOr<bool> GetBool(std::string_view key) const;
  absl::StatusOr<const GgufValue*> GetArray(std::string_view key) const;

 private:
  GgufFile() = default;
  friend class GgufParser;

  std::string name_;
  std::unique_ptr<MappedFile> mapping_;  // Null when parsed from a buffer.
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> metadata_;
  std::vector<GgufTensor> tensors_;
  absl::flat_hash_map<std::string, size_t> metadata_index_;
  absl::flat_hash_map<std::string, size_t> tensor_index_;
};

}  // namespace swiftlet
