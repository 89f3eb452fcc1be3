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

// The specification, as Sampler takes it at temperature 0: a scan from
// index 0 that moves to each value strictly greater than the one it holds.
// Ties keep the lowest index; a NaN is never moved to (every comparison
// with it is false), and one at index 0 is never left.
inline int32_t ArgMaxRow(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

// The best element of a part of a row. A part's best is its largest
// non-NaN value with the lowest index among equals; merging two parts by
// the same rule is associative and commutative (a total order on
// (value, index)), so parts merged in any order and any grouping give the
// row's best. With x[0] not NaN that is the scan's answer: the scan only
// ever holds non-NaN values, and ends on the first index of the largest.
// With x[0] NaN the scan never moves: ArgMaxOfBest says so.
struct ArgMaxCandidate {
  float value;
  int32_t index;
};

// A part with nothing in it yet (or only NaNs): any element beats it.
SWIFTLET_HOST_DEVICE inline ArgMaxCandidate ArgMaxNone() { return {-INFINITY, INT32_MAX}; }

SWIFTLET_HOST_DEVICE inline ArgMaxCandidate ArgMaxBetter(ArgMaxCandidate a, ArgMaxCandidate b) {
  return b.value > a.value || (b.value == a.value && b.index < a.index) ? b : a;
}

// The row's answer from its parts' merged best and its first value.
SWIFTLET_HOST_DEVICE inline int32_t ArgMaxOfBest(ArgMaxCandidate best, float first) {
  return first != first ? 0 : best.index;  // NaN at 0: the scan stays there.
}

}  // namespace swiftlet
