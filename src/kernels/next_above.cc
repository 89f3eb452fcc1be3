#include "kernels/next_above.h"

namespace swiftlet {

int64_t NextAboveScalar(const float* x, int64_t begin, int64_t n, float bar) {
  for (int64_t i = begin; i < n; ++i) {
    if (x[i] > bar) return i;
  }
  return n;
}

NextAboveFn NextAboveFor(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512Vnni:
    case KernelIsa::kAvx512: return NextAboveAvx512();
    case KernelIsa::kAvxVnni:
    case KernelIsa::kAvx2: return NextAboveAvx2();
    case KernelIsa::kScalar: break;
  }
  return NextAboveScalar;
}

}  // namespace swiftlet
