// The argmax a greedy sequence takes: its scalar specification (what
// Sampler takes at temperature 0 and Backend::ArgMax computes on a device),
// and the rule a parallel version merges parts of a row by. Plain C++ and,
// under nvcc, device code: the CPU tests check the GPU's merge against the
// scan (tests/kernels/argmax_test.cc).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace swiftlet {

// A row with no token to take: no value above -inf, every other one NaN
// (a broken model's logits, or every id masked).
inline constexpr int32_t kNoArgMax = -1;

// The specification, as Sampler takes it at temperature 0: the first index
// of the largest value that is not NaN, by a scan that moves to each value
// strictly greater than the one it holds, starting from nothing (below
// -inf). Ties keep the lowest index; a NaN is never taken (every
// comparison with it is false); kNoArgMax when no value is above -inf.
inline int32_t ArgMaxRow(const float* x, int64_t n) {
  int64_t best = kNoArgMax;
  float best_value = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] > best_value) {
      best = i;
      best_value = x[i];
    }
  }
  return static_cast<int32_t>(best);
}

// The best element of a part of a row. A part's best is its largest
// non-NaN value with the lowest index among equals; merging two parts by
// the same rule is associative and commutative (a total order on
// (value, index)), so parts merged in any order and any grouping give the
// row's best, and so the scan's answer when that value is above -inf
// (ArgMaxOfBest).
struct ArgMaxCandidate {
  float value;
  int32_t index;
};

// A part with nothing in it yet (or only NaNs): any element beats it.
SWIFTLET_HOST_DEVICE inline ArgMaxCandidate ArgMaxNone() { return {-INFINITY, INT32_MAX}; }

SWIFTLET_HOST_DEVICE inline ArgMaxCandidate ArgMaxBetter(ArgMaxCandidate a, ArgMaxCandidate b) {
  return b.value > a.value || (b.value == a.value && b.index < a.index) ? b : a;
}

// The row's answer from its parts' merged best.
SWIFTLET_HOST_DEVICE inline int32_t ArgMaxOfBest(ArgMaxCandidate best) {
  return best.value > -INFINITY ? best.index : kNoArgMax;
}

}  // namespace swiftlet
