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
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"
#include "kv/kv_store.h"

namespace swiftlet {

struct KvCacheShape {
  int64_t n_layer = 0;
  int64_t kv_dim = 0;     // n_head_kv * head_dim
  int64_t n_slots = 1;    // Sequences held at once.
  int64_t n_ctx = 0;      // Positions per slot.
  TensorType type = TensorType::kF16;
};

class KvCache final : public KvStore {
 public:
  // Allocates the whole cache up front; fails on an unsupported type or a
  // size over `max_bytes`.
  static absl::StatusOr<KvCache> Create(const KvCacheShape& shape, uint64_t max_bytes);

  const KvCacheShape& shape() const { return shape_; }
  uint64_t bytes() const { return data_.size(); }

  // KvStore, with sequence ids = slots 0..n_slots-1.
  absl::Status CheckWritable(int32_t slot, int64_t pos) const override;
  void Store(int64_t layer, int32_t slot, int64_t pos, const float* k, const float* v) override;
  KvRows Rows(int64_t layer, int32_t slot) const override;
  TensorType type() const override { return shape_.type; }

 private:
  KvCache() = default;
  uint8_t* Row(int64_t layer, int64_t slot, int64_t pos, bool value);

  KvCacheShape shape_;
  size_t row_bytes_ = 0;
  std::vector<uint8_t> data_;
  // One block per (layer, slot): the start of its K run and of its V run.
  std::vector<const uint8_t*> k_starts_, v_starts_;
};

}  // namespace swiftlet
