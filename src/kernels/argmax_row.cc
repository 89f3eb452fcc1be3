#include "kernels/argmax_row.h"

#include "core/argmax.h"
#include "kernels/argmax_row_variants.h"

namespace swiftlet {

ArgMaxRowFn ArgMaxRowFor(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512Vnni:
    case KernelIsa::kAvx512: return ArgMaxRowAvx512();
    case KernelIsa::kAvxVnni:
    case KernelIsa::kAvx2: return ArgMaxRowAvx2();
    case KernelIsa::kScalar: break;
  }
  return ArgMaxRow;
}

}  // namespace swiftlet
