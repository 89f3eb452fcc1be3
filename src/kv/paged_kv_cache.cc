#include "kv/paged_kv_cache.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/check.h"
#include "core/checked_math.h"
#include "core/str_cat.h"
#include "kernels/backend.h"
#include "kv/kv_row.h"

namespace swiftlet {
namespace {

// The chain root of a prefix-cache scope (0: the global one).
uint64_t ScopeRootHash(uint64_t scope) {
  return scope == 0 ? PrefixCache::kRootHash : DefaultChainHash(PrefixCache::kRootHash ^ scope, {});
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

uint64_t PagedKvCache::BlockBytes(const PagedKvShape& shape) {
  const size_t row = KvRowBytes(shape.type, shape.kv_dim);
  if (row == 0 || shape.n_layer <= 0 || shape.block_tokens <= 0) return 0;
  uint64_t bytes = row;
  for (int64_t f : {shape.block_tokens, shape.n_layer, int64_t{2}}) {
    if (!CheckedMul(bytes, static_cast<uint64_t>(f), &bytes)) return 0;
  }
  return bytes;
}

int64_t PagedKvCache::BlocksForBytes(const PagedKvShape& shape, uint64_t bytes) {
  const uint64_t block = BlockBytes(shape);
  if (block == 0) return 0;
  return static_cast<int64_t>(
      std::min<uint64_t>(bytes / block, std::numeric_limits<int32_t>::max()));
}

absl::StatusOr<PagedKvCache> PagedKvCache::Create(const PagedKvShape& shape, uint64_t max_bytes,
                                                   Backend* device) {
  if (shape.n_layer <= 0 || shape.kv_dim <= 0 || shape.block_tokens <= 0 || shape.n_blocks <= 0 ||
      shape.max_sequences <= 0) {
    return absl::InvalidArgumentError(StrCat(
        "paged KV cache sizes must be positive (layers ", shape.n_layer, ", kv_dim ", shape.kv_dim,
        ", block tokens ", shape.block_tokens, ", blocks ", shape.n_blocks, ", sequences ",
        shape.max_sequences, ")"));
  }
  if (KvRowBytes(shape.type, shape.kv_dim) == 0) {
    return absl::InvalidArgumentError(StrCat("KV cache type ", NameOf(shape.type), " with rows of ",
                                             shape.kv_dim, " is not supported (f16, f32, or q8_0 with rows of a multiple of 32)"));
  }
  if (shape.n_blocks > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        StrCat("paged KV cache: ", shape.n_blocks, " blocks is too many"));
  }
  const uint64_t block_bytes = BlockBytes(shape);
  uint64_t total = 0;
  if (block_bytes == 0 || !CheckedMul(block_bytes, static_cast<uint64_t>(shape.n_blocks), &total) ||
      total > static_cast<uint64_t>(std::numeric_limits<ptrdiff_t>::max())) {
    return absl::ResourceExhaustedError(
        StrCat("paged KV cache of ", shape.n_blocks, " blocks of ", shape.block_tokens,
               " positions x ", shape.n_layer, " layers x ", shape.kv_dim,
               " values is too large to address"));
  }
  if (total > max_bytes) {
    return absl::ResourceExhaustedError(
        StrCat("paged KV cache of ", shape.n_blocks, " blocks x ", block_bytes,
               " bytes needs ", total, " bytes, over the limit of ", max_bytes));
  }
  // Not zeroed: rows are read only once written, and touching every page
  // here would commit the whole budget before it is used.
  const auto bytes = static_cast<size_t>(total);
  std::unique_ptr<DeviceBuffer> memory =
      device != nullptr ? device->Allocate(bytes) : AllocateHostBuffer(bytes);
  if (memory == nullptr) {
    return absl::ResourceExhaustedError(
        StrCat("paged KV cache: could not allocate ", total, " bytes"));
  }
  return PagedKvCache(shape, block_bytes, std::move(memory));
}

PagedKvCache::PagedKvCache(const PagedKvShape& shape, uint64_t block_bytes,
                           std::unique_ptr<DeviceBuffer> memory)
    : shape_(shape),
      block_bytes_(block_bytes),
      row_bytes_(KvRowBytes(shape.type, shape.kv_dim)),
      memory_(std::move(memory)),
      pool_(static_cast<int32_t>(shape.n_blocks)),
      prefix_(shape.block_tokens, static_cast<int32_t>(shape.n_blocks)),
      seqs_(static_cast<size_t>(shape.max_sequences)) {
  free_ids_.reserve(seqs_.size());
  for (int32_t id = shape.max_sequences - 1; id >= 0; --id) free_ids_.push_back(id);
}

const PagedKvCache::Sequence& PagedKvCache::Seq(int32_t seq) const {
  SWIFTLET_CHECK(Exists(seq));
  return seqs_[static_cast<size_t>(seq)];
}

bool PagedKvCache::Exists(int32_t seq) const {
  return seq >= 0 && seq < shape_.max_sequences && seqs_[static_cast<size_t>(seq)].live;
}

absl::Status PagedKvCache::CheckExists(int32_t seq) const {
  if (Exists(seq)) return absl::OkStatus();
  return absl::InvalidArgumentError(StrCat("KV sequence ", seq, " does not exist"));
}

int64_t PagedKvCache::length(int32_t seq) const { return Seq(seq).length; }

std::span<const int32_t> PagedKvCache::blocks(int32_t seq) const { return Seq(seq).blocks; }

size_t PagedKvCache::RowsOffset(int32_t block, int64_t layer, bool value) const {
  const size_t rows = static_cast<size_t>(shape_.block_tokens) * row_bytes_;
  return static_cast<size_t>(block) * block_bytes_ + (static_cast<size_t>(layer) * 2 + value) * rows;
}

int32_t PagedKvCache::NewSequenceId() {
  if (free_ids_.empty()) return -1;
  // The lowest free id, so ids stay small and dense.
  const auto lowest = std::min_element(free_ids_.begin(), free_ids_.end());
  const int32_t id = *lowest;
  *lowest = free_ids_.back();
  free_ids_.pop_back();
  Sequence& s = seqs_[static_cast<size_t>(id)];
  s.live = true;
  ++live_sequences_;
  return id;
}

absl::StatusOr<int32_t> PagedKvCache::CreateSequence(uint64_t scope) {
  const int32_t id = NewSequenceId();
  if (id < 0) {
    return absl::ResourceExhaustedError(
        StrCat("KV cache holds its maximum of ", shape_.max_sequences, " sequences"));
  }
  // Each scope's chains start from a root of their own; parents' hashes
  // are compared on lookup, so chains of two scopes never meet.
  Sequence& s = seqs_[static_cast<size_t>(id)];
  s.root_hash = ScopeRootHash(scope);
  s.chain_hash = s.root_hash;
  return id;
}

absl::StatusOr<int32_t> PagedKvCache::Fork(int32_t seq) {
  SWIFTLET_RETURN_IF_ERROR(CheckExists(seq));
  SWIFTLET_ASSIGN_OR_RETURN(const int32_t id, CreateSequence());
  const Sequence& from = seqs_[static_cast<size_t>(seq)];
  Sequence& to = seqs_[static_cast<size_t>(id)];
  for (int32_t b : from.blocks) pool_.Ref(b);
  to.length = from.length;
  to.written = from.written;
  to.blocks = from.blocks;
  to.hashed_blocks = from.hashed_blocks;
  to.root_hash = from.root_hash;
  to.chain_hash = from.chain_hash;
  to.chain_ref = from.chain_ref;
  to.chain_broken = from.chain_broken;
  return id;
}

int64_t PagedKvCache::BlocksNeeded(int32_t seq, int64_t n_more) const {
  const Sequence& s = Seq(seq);
  if (n_more <= 0) return 0;
  // More than the cache holds: more blocks than it has (and no overflow).
  if (n_more > shape_.n_blocks * shape_.block_tokens - s.length) return shape_.n_blocks + 1;
  const int64_t new_blocks = CeilDiv(s.length + n_more, shape_.block_tokens) -
                             static_cast<int64_t>(s.blocks.size());
  // New positions land in a partial last block: it must be the sequence's own.
  const bool copy = s.length % shape_.block_tokens != 0 && pool_.refcount(s.blocks.back()) > 1;
  return new_blocks + (copy ? 1 : 0);
}

int32_t PagedKvCache::AllocateBlock() {
  bool evicted = false;
  const int32_t block = pool_.Allocate(&evicted);
  SWIFTLET_CHECK(block >= 0);  // Callers count blocks_available() first.
  if (evicted) {
    prefix_.Evict(block);
    if (scrub_) Scrub(block);
  }
  return block;
}

PagedKvCache::PagedKvCache(PagedKvCache&&) noexcept = default;
PagedKvCache& PagedKvCache::operator=(PagedKvCache&&) noexcept = default;

PagedKvCache::~PagedKvCache() {
  if (scrub_ && memory_ != nullptr) memory_->Zero(0, static_cast<size_t>(pool_.total()) * block_bytes_);
}

void PagedKvCache::Scrub(int32_t block) {
  memory_->Zero(static_cast<size_t>(block) * block_bytes_, block_bytes_);
}

void PagedKvCache::Release(int32_t block) {
  pool_.Unref(block, prefix_.IsRegistered(block));
  if (scrub_ && pool_.refcount(block) == 0 && !pool_.is_cached(block)) Scrub(block);
}

int64_t PagedKvCache::ClearPrefixCache() {
  int64_t freed = 0;
  for (int32_t b = 0; b < static_cast<int32_t>(shape_.n_blocks); ++b) {
    if (!prefix_.IsRegistered(b)) continue;
    prefix_.Evict(b);
    if (pool_.is_cached(b)) {
      pool_.Uncache(b);
      if (scrub_) Scrub(b);
      ++freed;
    }
  }
  return freed;
}

absl::Status PagedKvCache::Reserve(int32_t seq, int64_t new_length) {
  SWIFTLET_RETURN_IF_ERROR(CheckExists(seq));
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  if (new_length <= s.length) return absl::OkStatus();
  const int64_t max_length = shape_.n_blocks * shape_.block_tokens;
  if (new_length > max_length) {
    return absl::ResourceExhaustedError(StrCat("KV sequence ", seq, " cannot hold ", new_length,
                                               " positions: the cache holds ", max_length));
  }
  const int64_t needed = BlocksNeeded(seq, new_length - s.length);
  if (needed > pool_.available()) {
    return absl::ResourceExhaustedError(StrCat(
        "KV cache is full: sequence ", seq, " needs ", needed, " more blocks for ", new_length,
        " positions, ", pool_.available(), " of ", pool_.total(), " are free or evictable"));
  }
  if (s.length % shape_.block_tokens != 0 && pool_.refcount(s.blocks.back()) > 1) {
    // Copy-on-write: the partial last block is shared, and this sequence is
    // about to write its next rows.
    const int32_t shared = s.blocks.back();
    const int32_t own = AllocateBlock();
    const size_t bytes = static_cast<size_t>(s.length % shape_.block_tokens) * row_bytes_;
    for (int64_t l = 0; l < shape_.n_layer; ++l) {
      for (bool value : {false, true}) {
        memory_->CopyWithin(RowsOffset(own, l, value), RowsOffset(shared, l, value), bytes);
      }
    }
    Release(shared);
    s.blocks.back() = own;
  }
  const int64_t n_blocks = CeilDiv(new_length, shape_.block_tokens);
  while (static_cast<int64_t>(s.blocks.size()) < n_blocks) s.blocks.push_back(AllocateBlock());
  s.length = new_length;
  return absl::OkStatus();
}

absl::Status PagedKvCache::Free(int32_t seq) {
  SWIFTLET_RETURN_IF_ERROR(CheckExists(seq));
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  // Last block first: it joins the LRU first, so a prefix's tail is evicted
  // before its head (a tail is useless without its head).
  for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it) Release(*it);
  s.live = false;
  s.length = s.written = 0;
  s.blocks.clear();
  s.hashed_blocks = 0;
  s.root_hash = PrefixCache::kRootHash;
  s.chain_hash = PrefixCache::kRootHash;
  s.chain_ref = PrefixEntryRef{};
  s.chain_broken = false;
  free_ids_.push_back(seq);
  --live_sequences_;
  return absl::OkStatus();
}

int64_t PagedKvCache::CachedPrefixTokens(uint64_t scope, std::span<const int32_t> tokens,
                                         int64_t max_tokens) const {
  const int64_t B = shape_.block_tokens;
  const int64_t n_full =
      std::max<int64_t>(0, std::min<int64_t>(static_cast<int64_t>(tokens.size()), max_tokens)) / B;
  return prefix_.LeadingCachedBlocks(ScopeRootHash(scope), tokens, n_full) * B;
}

absl::StatusOr<int64_t> PagedKvCache::MatchPrefix(int32_t seq, std::span<const int32_t> tokens,
                                                  int64_t max_tokens) {
  SWIFTLET_RETURN_IF_ERROR(CheckExists(seq));
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  if (s.length != 0 || !s.blocks.empty()) {
    return absl::FailedPreconditionError(
        StrCat("KV sequence ", seq, " must be empty to match a prefix (it has ", s.length,
               " positions)"));
  }
  const int64_t B = shape_.block_tokens;
  const int64_t n_full =
      std::max<int64_t>(0, std::min<int64_t>(static_cast<int64_t>(tokens.size()), max_tokens)) / B;
  int64_t matched = 0;
  for (; matched < n_full; ++matched) {
    const auto block_tokens =
        tokens.subspan(static_cast<size_t>(matched * B), static_cast<size_t>(B));
    const uint64_t hash = prefix_.Hash(s.chain_hash, block_tokens);
    const PrefixCache::Found found = prefix_.Find(hash, s.chain_hash, s.chain_ref, block_tokens);
    if (found.lookup == PrefixCache::Lookup::kStale) DropStale(found.block);
    if (found.lookup != PrefixCache::Lookup::kFound) break;
    pool_.Ref(found.block);
    s.blocks.push_back(found.block);
    s.chain_hash = hash;
    s.chain_ref = prefix_.RefOf(found.block);
  }
  s.length = s.written = matched * B;
  s.hashed_blocks = matched;
  prefix_.RecordQuery(n_full * B, matched * B);
  return matched * B;
}

absl::Status PagedKvCache::Commit(int32_t seq, std::span<const int32_t> tokens) {
  SWIFTLET_RETURN_IF_ERROR(CheckExists(seq));
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  const int64_t B = shape_.block_tokens;
  const int64_t n_full = std::min<int64_t>(static_cast<int64_t>(tokens.size()), s.written) / B;
  bool restarted = false;
  while (!s.chain_broken && s.hashed_blocks < n_full) {
    if (!prefix_.IsLive(s.chain_ref)) {
      // The entry standing for the blocks hashed so far (another
      // sequence's, with the same content) was evicted: nothing can be
      // chained to it. Walk again from the first block, registering this
      // sequence's own blocks where their content is gone. Every entry the
      // walk chains through is live and nothing is evicted meanwhile, so it
      // restarts at most once.
      SWIFTLET_CHECK(!restarted);
      restarted = true;
      s.hashed_blocks = 0;
      s.chain_hash = s.root_hash;
      s.chain_ref = PrefixEntryRef{};
    }
    const auto block_tokens =
        tokens.subspan(static_cast<size_t>(s.hashed_blocks * B), static_cast<size_t>(B));
    const int32_t own = s.blocks[static_cast<size_t>(s.hashed_blocks)];
    const uint64_t hash = prefix_.Hash(s.chain_hash, block_tokens);
    PrefixCache::Found found = prefix_.Find(hash, s.chain_hash, s.chain_ref, block_tokens);
    if (found.lookup == PrefixCache::Lookup::kStale) {
      DropStale(found.block);
      found = {};
    }
    if (found.lookup == PrefixCache::Lookup::kCollision) {
      // Other content holds this hash: nothing after it can be registered
      // under a chain the index would trust.
      s.chain_broken = true;
      break;
    }
    if (found.lookup == PrefixCache::Lookup::kFound) {
      // The same content is registered (maybe this very block): keep one,
      // and chain on through it.
      s.chain_ref = prefix_.RefOf(found.block);
    } else {
      if (prefix_.IsRegistered(own)) {
        return absl::InvalidArgumentError(
            StrCat("commit to KV sequence ", seq, ": tokens of block ", s.hashed_blocks,
                   " differ from those it was cached with"));
      }
      prefix_.Insert(hash, s.chain_hash, s.chain_ref, block_tokens, own);
      s.chain_ref = prefix_.RefOf(own);
    }
    s.chain_hash = hash;
    ++s.hashed_blocks;
  }
  return absl::OkStatus();
}

void PagedKvCache::DropStale(int32_t block) {
  prefix_.ForgetStale(block);
  // Unreferenced, its rows serve no one now.
  if (pool_.is_cached(block)) pool_.Uncache(block);
}

absl::Status PagedKvCache::CheckWritable(int32_t seq, int64_t pos) const {
  SWIFTLET_RETURN_IF_ERROR(CheckExists(seq));
  const Sequence& s = seqs_[static_cast<size_t>(seq)];
  if (pos < 0 || pos >= s.length) {
    return absl::InvalidArgumentError(StrCat("position ", pos, " of KV sequence ", seq,
                                             " is not reserved (length ", s.length, ")"));
  }
  const int32_t block = s.blocks[static_cast<size_t>(pos / shape_.block_tokens)];
  if (pool_.refcount(block) > 1) {
    return absl::FailedPreconditionError(StrCat(
        "position ", pos, " of KV sequence ", seq, " is in block ", block, " shared by ",
        pool_.refcount(block), " sequences; writing it would change the others"));
  }
  if (prefix_.IsRegistered(block)) {
    return absl::FailedPreconditionError(StrCat("position ", pos, " of KV sequence ", seq,
                                                " is in block ", block,
                                                ", full and in the prefix cache (immutable)"));
  }
  return absl::OkStatus();
}

KvLayer PagedKvCache::Layer(int64_t layer) const {
  SWIFTLET_CHECK(layer >= 0 && layer < shape_.n_layer);
  const size_t rows = static_cast<size_t>(shape_.block_tokens) * row_bytes_;
  KvLayer l;
  l.base = memory_->data();
  l.block_stride = block_bytes_;
  l.k_offset = static_cast<size_t>(layer) * 2 * rows;
  l.v_offset = l.k_offset + rows;
  l.block_rows = shape_.block_tokens;
  l.row_bytes = row_bytes_;
  l.type = shape_.type;
  return l;
}

std::span<const int32_t> PagedKvCache::BlockTable(int32_t seq) const { return Seq(seq).blocks; }

void PagedKvCache::MarkStored(int32_t seq, int64_t pos) {
  SWIFTLET_CHECK(Exists(seq));
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  SWIFTLET_CHECK(pos >= 0 && pos < s.length);
  if (pos == s.written) ++s.written;
}

}  // namespace swiftlet
