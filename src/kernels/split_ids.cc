#include "kernels/split_ids.h"

namespace swiftlet {

int64_t SplitIdsScalar(const float* p, int64_t n, uint32_t lo, uint32_t hi, int32_t* above, int32_t* at,
                       int64_t* n_at) {
  int64_t n_above = 0;
  *n_at = 0;
  split_ids_internal::SplitFrom(p, 0, n, lo, hi, above, at, n_above, *n_at);
  return n_above;
}

SplitIdsFn SplitIdsFor(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512Vnni:
    case KernelIsa::kAvx512: return SplitIdsAvx512();
    case KernelIsa::kAvxVnni:
    case KernelIsa::kAvx2: return SplitIdsAvx2();
    case KernelIsa::kScalar: break;
  }
  return SplitIdsScalar;
}

}  // namespace swiftlet
