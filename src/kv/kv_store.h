// The small interface the model reaches a KV cache through. The contiguous
// KvCache (kv_cache.h) and the engine's paged cache both implement it;
// Model::Forward knows only this. The cache's rows live in memory the
// backend's ops read and write (kernels/backend.h: StoreKv, Attention); the
// store describes where (Layer) and which blocks hold each sequence
// (BlockTable), and keeps the bookkeeping on the host.
// Not thread-safe: owned and used by the engine thread.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "core/tensor_type.h"

namespace swiftlet {

// kernels/backend.h; this header's users that call Layer or Rows include
// it (the engine, which holds a cache, may not see kernels/).
struct KvLayer;
struct KvRows;

class KvStore {
 public:
  virtual ~KvStore() = default;

  // OK when position `pos` of sequence `seq` has room in the store and is
  // the sequence's own to write; an error naming the problem otherwise
  // (checked for a whole batch before any write, so a bad batch changes
  // nothing).
  virtual absl::Status CheckWritable(int32_t seq, int64_t pos) const = 0;

  // Where `layer`'s rows are.
  virtual KvLayer Layer(int64_t layer) const = 0;

  // The blocks holding `seq`'s positions, in order; valid until the store's
  // next change of that sequence's blocks.
  virtual std::span<const int32_t> BlockTable(int32_t seq) const = 0;

  // Forward has stored position `pos` of `seq` in every layer (in position
  // order within a sequence): a store that shares finished blocks (the
  // prefix cache) may now count it.
  virtual void MarkStored(int32_t /*seq*/, int64_t /*pos*/) {}

  // The element type rows are stored in (kv/kv_row.h).
  virtual TensorType type() const = 0;

  // `seq`'s rows in `layer`, for code that reads the cache's memory
  // directly (tests, tools on the CPU backend).
  KvRows Rows(int64_t layer, int32_t seq) const;
};

}  // namespace swiftlet
