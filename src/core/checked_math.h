// Overflow-safe arithmetic for sizes computed from untrusted input.
// Each returns false (leaving *out unspecified) when the result overflows.
#pragma once

#include <cstdint>

namespace swiftlet {

[[nodiscard]] inline bool CheckedAdd(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

[[nodiscard]] inline bool CheckedMul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// Rounds `value` up to a multiple of `alignment` (a power of two).
[[nodiscard]] inline bool CheckedAlignUp(uint64_t value, uint64_t alignment,
                                         uint64_t* out) {
  uint64_t bumped;
  if (!CheckedAdd(value, alignment - 1, &bumped)) return false;
  *out = bumped & ~(alignment - 1);
  return true;
}

}  // namespace swiftlet
