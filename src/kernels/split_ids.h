// Top-p's split of a row of weights around its boundary bucket, with SIMD
// twins that give the same ids: each id whose weight's bits (as an
// unsigned integer: the order of weights >= +0) are >= hi goes to `above`,
// each whose bits are in [lo, hi) to `at`, both in id order. The sampler
// then sorts only `at`. On AVX-512 the split takes, for each 16 ids, two
// compares and one compressed store a list: no branch, and no store an id.
#pragma once

#include <bit>
#include <cstdint>

#include "kernels/cpu_features.h"

namespace swiftlet {

// A twin may write up to this many ids past what it keeps.
inline constexpr int64_t kSplitIdsSlack = 16;

// Returns how many ids went to `above`; *n_at gets how many went to `at`.
// Each buffer has room for n + kSplitIdsSlack ids. n >= 0, lo <= hi.
using SplitIdsFn = int64_t (*)(const float* p, int64_t n, uint32_t lo, uint32_t hi, int32_t* above, int32_t* at,
                               int64_t* n_at);

// The scalar specification.
int64_t SplitIdsScalar(const float* p, int64_t n, uint32_t lo, uint32_t hi, int32_t* above, int32_t* at,
                       int64_t* n_at);

// The twin for `isa` (the scalar one where it has none).
SplitIdsFn SplitIdsFor(KernelIsa isa);

// The twins, each in a file compiled with its ISA's flags.
SplitIdsFn SplitIdsAvx2();
SplitIdsFn SplitIdsAvx512();

namespace split_ids_internal {

// The scalar split of ids [begin, n), after the n_above and n_at kept so
// far: both stores made for every id and only the matching count moved, so
// no branch on the weights (a store past a count is the slack's).
inline void SplitFrom(const float* p, int64_t begin, int64_t n, uint32_t lo, uint32_t hi, int32_t* above,
                      int32_t* at, int64_t& n_above, int64_t& n_at) {
  for (int64_t i = begin; i < n; ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(p[i]);
    above[n_above] = static_cast<int32_t>(i);
    n_above += bits >= hi;
    at[n_at] = static_cast<int32_t>(i);
    n_at += bits >= lo && bits < hi;
  }
}

}  // namespace split_ids_internal

}  // namespace swiftlet
