// AVX-512 attention ops (compiled with -mavx512f -mf16c; called only when
// CPUID reports them, for head dimensions that are a multiple of 16). The
// ops themselves: attention_ops_simd.inc.
#include "kernels/intrinsics.h"

#include <algorithm>
#include <cmath>

#include "kernels/attention_ops_variants.h"
#include "kernels/kernel_exp.h"

namespace swiftlet {
namespace {

#include "kernels/lanes16_zmm.inc"
#include "kernels/kernel_exp_zmm.inc"

// Eight heads' accumulators + the widened row fit the 32 registers.
constexpr int64_t kHeadsPerPass = 8;
// 4 heads x 4 slices of value accumulators + 4 widened slices: 21 of the
// 32 registers.
constexpr int64_t kAxpyHeads = 4;
constexpr int64_t kAxpySlices = 4;

#include "kernels/attention_ops_simd.inc"

}  // namespace

const AttentionOps& AttentionOpsAvx512() { return Ops(); }

}  // namespace swiftlet
