// Writes GGUF v3 files.
//
// Metadata and tensor descriptions are collected first; WriteFile() then
// streams the header and each tensor's bytes in order, asking a fill callback
// for a tensor's bytes only when it is written, so a multi-gigabyte model is
// produced with memory for one tensor at a time. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"
#include "gguf/gguf_value.h"

namespace swiftlet {

class GgufWriter {
 public:
  // Fills `out` (exactly the tensor's byte size) with the tensor's data.
  using FillFn = std::function<absl::Status(std::span<uint8_t> out)>;

  explicit GgufWriter(uint32_t alignment = 32);

  // Sets a metadata key; a key set twice keeps its first position.
  void Set(const std::string& key, GgufValue value);
  void Remove(const std::string& key);

  // Declares a tensor. `shape` lists ne[0] (the row length) first. Fails on
  // a bad shape (1 to 4 dims, each > 0, rows a whole number of blocks) or a
  // duplicate name.
  absl::Status AddTensor(std::string name, TensorType type,
                         std::span<const int64_t> shape, FillFn fill);

  // Writes to `path` through a temporary file renamed into place, so a
  // failed write never leaves a truncated model under the final name.
  absl::Status WriteFile(const std::string& path) const;

  // The whole file in memory (tests, small files).
  absl::StatusOr<std::vector<uint8_t>> WriteToBuffer() const;

 private:
  struct PendingTensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> shape;
    uint64_t n_bytes;
    uint64_t offset;
    FillFn fill;
  };
  using Sink = std::function<absl::Status(std::span<const uint8_t>)>;
  absl::Status Write(const Sink& sink) const;

  uint32_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<PendingTensor> tensors_;
  uint64_t data_size_ = 0;
};

}  // namespace swiftlet
