// The KV cache: keys and values of every layer for a set of sequence slots.
//
// This is the contiguous cache (one region per slot and layer, sized for the
// slot's whole context); the paged cache of the engine issue implements the
// same small interface. Values are stored in the cache's type (F32 or F16)
// and attention reads them back from there, in prefill and decode alike, so
// a row's result does not depend on how its prompt was batched.
// Not thread-safe: owned and used by the engine thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"
#include "kv/kv_store.h"

namespace swiftlet {

class Backend;       // kernels/backend.h
class DeviceBuffer;  // kernels/backend.h

struct KvCacheShape {
  int64_t n_layer = 0;
  int64_t kv_dim = 0;     // n_head_kv * head_dim
  int64_t n_slots = 1;    // Sequences held at once.
  int64_t n_ctx = 0;      // Positions per slot.
  TensorType type = TensorType::kF16;
};

class KvCache final : public KvStore {
 public:
  // Allocates the whole cache up front, zeroed, in `device`'s memory (host
  // memory when null); fails on an unsupported type, a size over
  // `max_bytes`, or a failed allocation.
  static absl::StatusOr<KvCache> Create(const KvCacheShape& shape, uint64_t max_bytes,
                                        Backend* device = nullptr);
  ~KvCache();
  KvCache(KvCache&&) noexcept;
  KvCache& operator=(KvCache&&) noexcept;

  const KvCacheShape& shape() const { return shape_; }
  uint64_t bytes() const { return bytes_; }

  // KvStore, with sequence ids = slots 0..n_slots-1. Each slot is one
  // block of n_ctx positions: its table is {slot}.
  absl::Status CheckWritable(int32_t slot, int64_t pos) const override;
  KvLayer Layer(int64_t layer) const override;
  std::span<const int32_t> BlockTable(int32_t slot) const override;
  TensorType type() const override { return shape_.type; }

 private:
  KvCache() = default;

  KvCacheShape shape_;
  size_t row_bytes_ = 0;
  // Layout: [layer][slot][k|v][pos][kv_dim], in the backend's memory.
  std::unique_ptr<DeviceBuffer> memory_;
  uint64_t bytes_ = 0;
  std::vector<int32_t> slot_ids_;  // 0..n_slots-1: slot s's table is {s}.
};

}  // namespace swiftlet
