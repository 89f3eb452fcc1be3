#include "kv/kv_cache.h"

#include <cstring>

#include "core/check.h"
#include "core/checked_math.h"
#include "core/str_cat.h"
#include "kernels/backend.h"
#include "kv/kv_row.h"

namespace swiftlet {

absl::StatusOr<KvCache> KvCache::Create(const KvCacheShape& shape, uint64_t max_bytes) {
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
  cache.data_.assign(total, 0);
  for (int64_t l = 0; l < shape.n_layer; ++l) {
    for (int64_t s = 0; s < shape.n_slots; ++s) {
      cache.k_starts_.push_back(cache.Row(l, s, 0, false));
      cache.v_starts_.push_back(cache.Row(l, s, 0, true));
    }
  }
  return cache;
}

uint8_t* KvCache::Row(int64_t layer, int64_t slot, int64_t pos, bool value) {
  SWIFTLET_CHECK(layer >= 0 && layer < shape_.n_layer && slot >= 0 && slot < shape_.n_slots &&
                 pos >= 0 && pos < shape_.n_ctx);
  // Layout: [layer][slot][k|v][pos][kv_dim].
  const size_t index = ((static_cast<size_t>(layer) * shape_.n_slots + slot) * 2 + value) *
                           static_cast<size_t>(shape_.n_ctx) + pos;
  return data_.data() + index * row_bytes_;
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

void KvCache::Store(int64_t layer, int32_t slot, int64_t pos, const float* k, const float* v) {
  uint8_t* krow = Row(layer, slot, pos, false);
  uint8_t* vrow = Row(layer, slot, pos, true);
  EncodeKvRow(shape_.type, k, shape_.kv_dim, krow);
  EncodeKvRow(shape_.type, v, shape_.kv_dim, vrow);
}

KvRows KvCache::Rows(int64_t layer, int32_t slot) const {
  SWIFTLET_CHECK(layer >= 0 && layer < shape_.n_layer && slot >= 0 && slot < shape_.n_slots);
  const size_t i = static_cast<size_t>(layer * shape_.n_slots + slot);
  return KvRows{&k_starts_[i], &v_starts_[i], shape_.n_ctx, row_bytes_, shape_.type};
}

}  // namespace swiftlet
