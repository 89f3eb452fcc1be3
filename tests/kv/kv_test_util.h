// Helpers shared by the KV cache tests: reading rows back through KvRows
// and writing rows the way Model::Forward does (the CPU backend's StoreKv,
// then MarkStored).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/backend.h"
#include "kv/paged_kv_cache.h"

namespace swiftlet {

// Row value of (pos, layer, element i, K or V).
using RowFn = std::function<float(int64_t pos, int64_t layer, int64_t i, bool value)>;

// Position j's K (value false) or V row of `rows`, as floats.
std::vector<float> ReadRow(const KvRows& rows, int64_t j, bool value, int64_t kv_dim);

// Writes one position's K and V rows (kv_dim floats each) of `seq` in
// `layer` through the CPU backend, without MarkStored.
void StoreRow(KvStore& cache, int64_t layer, int32_t seq, int32_t pos, const float* k,
              const float* v, int64_t kv_dim);

// Stores positions [from, to) of `seq` in every layer, layer by layer as
// Forward does, with values from `fn`, then marks them stored.
void StoreRows(PagedKvCache& cache, int32_t seq, int64_t from, int64_t to, const RowFn& fn);

// A value exactly representable in F16 and F32 (a multiple of 1/64 under 16
// in magnitude), pseudo-random in its arguments.
float ExactValue(uint64_t salt, int64_t pos, int64_t layer, int64_t i, bool value);

// A cache of 2 layers, kv_dim 8, blocks of 4 positions.
PagedKvCache MakeCache(int64_t n_blocks, TensorType type = TensorType::kF32,
                       int32_t max_sequences = 8);
int32_t NewSeq(PagedKvCache& cache);
// Reserves [length, to) and writes it with ExactValue(salt, ...).
void Extend(PagedKvCache& cache, int32_t seq, int64_t to, uint64_t salt);
// Positions [from, to) of `seq` hold ExactValue(salt, ...) in every layer.
void ExpectRows(const PagedKvCache& cache, int32_t seq, int64_t from, int64_t to, uint64_t salt);

// splitmix64: an independent mixer for test data.
uint64_t SplitMix(uint64_t x);

}  // namespace swiftlet
