#include "kv/kv_cache.h"

#include "core/check.h"
#include "core/checked_math.h"
#include "core/str_cat.h"
#include "kernels/backend.h"
#include "kv/kv_row.h"

namespace swiftlet {

KvCache::~KvCache() = default;
KvCache::KvCache(KvCache&&) noexcept = default;
KvCache& KvCache::operator=(KvCache&&) noexcept = default;

absl::StatusOr<KvCache> KvCache::Create(const KvCacheShape& shape, uint64_t max_bytes, Backend* device) {
  if (shape.n_layer <= 0 || shape.kv_dim <= 0 || shape.n_slots <= 0 || shape.n_ctx <= 0) {
    return absl::InvalidArgumentError("KV cache dimensions must be positive");
  }
  if (KvRowBytes(shape.type, shape.kv_dim) == 0) {
    return absl::InvalidArgumentError(StrCat("KV cache type ", NameOf(shape.type), " with rows of ",
                                             shape.kv_dim, " is not supported (f16, f32, or q8_0 with rows of a multiple of 32)"));
  }
  KvCache cache;
  cache.shape_ = shape;
  cache.row_bytes_ = KvRowBytes(shape.type, shape.kv_dim);
  uint64_t total = cache.row_bytes_;
  for (int64_t f : {shape.n_layer, shape.n_slots, shape.n_ctx, int64_t{2}}) {
    if (!CheckedMul(total, static_cast<uint64_t>(f), &total)) total = UINT64_MAX;
  }
  if (total > max_bytes) {
    return absl::ResourceExhaustedError(StrCat("KV cache for ", shape.n_ctx, " positions x ",
                                               shape.n_slots, " sequences needs ", total,
                                               " bytes, over the limit of ", max_bytes));
  }
  const auto bytes = static_cast<size_t>(total);
  cache.memory_ = device != nullptr ? device->Allocate(bytes) : AllocateHostBuffer(bytes);
  if (cache.memory_ == nullptr) {
    return absl::ResourceExhaustedError(StrCat("KV cache: could not allocate ", total, " bytes"));
  }
  cache.memory_->Zero(0, bytes);
  cache.bytes_ = total;
  for (int32_t slot = 0; slot < shape.n_slots; ++slot) cache.slot_ids_.push_back(slot);
  return cache;
}

absl::Status KvCache::CheckWritable(int32_t slot, int64_t pos) const {
  if (slot < 0 || slot >= shape_.n_slots) {
    return absl::InvalidArgumentError(StrCat("KV slot ", slot, " does not exist"));
  }
  if (pos < 0 || pos >= shape_.n_ctx) {
    return absl::InvalidArgumentError(
        StrCat("position ", pos, " is outside the context (", shape_.n_ctx, ")"));
  }
  return absl::OkStatus();
}

KvLayer KvCache::Layer(int64_t layer) const {
  SWIFTLET_CHECK(layer >= 0 && layer < shape_.n_layer);
  const size_t run = static_cast<size_t>(shape_.n_ctx) * row_bytes_;  // One slot's K (or V) rows.
  KvLayer l;
  l.base = memory_->data() + static_cast<size_t>(layer * shape_.n_slots) * 2 * run;
  l.block_stride = 2 * run;
  l.k_offset = 0;
  l.v_offset = run;
  l.block_rows = shape_.n_ctx;
  l.row_bytes = row_bytes_;
  l.type = shape_.type;
  return l;
}

std::span<const int32_t> KvCache::BlockTable(int32_t slot) const {
  SWIFTLET_CHECK(slot >= 0 && slot < shape_.n_slots);
  return {slot_ids_.data() + slot, 1};
}

}  // namespace swiftlet
