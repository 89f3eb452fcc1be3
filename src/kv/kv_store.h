// The small interface the model writes keys and values through and attention
// reads them back from. The contiguous KvCache (kv_cache.h) and the engine's
// paged cache both implement it; Model::Forward knows only this.
// Not thread-safe: owned and used by the engine thread.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor_type.h"

namespace swiftlet {

// The rows a store hands attention (kernels/backend.h); the store's users
// that read them include that header.
struct KvRows;

class KvStore {
 public:
  virtual ~KvStore() = default;

  // OK when position `pos` of sequence `seq` has room in the store; an error
  // naming the problem otherwise (checked for a whole batch before any
  // Store, so a bad batch changes nothing).
  virtual absl::Status CheckWritable(int32_t seq, int64_t pos) const = 0;

  // Stores one position's key and value rows (kv_dim floats each, converted
  // to the store's type) for `seq` in `layer`.
  virtual void Store(int64_t layer, int32_t seq, int64_t pos, const float* k, const float* v) = 0;

  // The rows of `seq` in `layer`, valid until the store's next change of
  // that sequence's blocks.
  virtual KvRows Rows(int64_t layer, int32_t seq) const = 0;

  // The element type rows are stored in (kv/kv_row.h).
  virtual TensorType type() const = 0;
};

}  // namespace swiftlet
