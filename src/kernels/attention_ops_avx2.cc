// AVX2 attention ops (compiled with -mavx2 -mf16c; called only when CPUID
// reports them, for head dimensions that are a multiple of 16): the ops of
// attention_ops_simd.inc on YMM pairs, the same bits as the scalar twin.
#include "kernels/intrinsics.h"

#include <algorithm>
#include <cmath>

#include "kernels/attention_ops_variants.h"
#include "kernels/kernel_exp.h"

namespace swiftlet {
namespace {

#include "kernels/lanes16_ymm.inc"
#include "kernels/kernel_exp_ymm.inc"

// Four heads' accumulator pairs + the widened row pair fit the 16
// registers with room for the query loads.
constexpr int64_t kHeadsPerPass = 4;
// 2 heads x 2 slices of value accumulators (8 ymm) + 2 widened slices (4):
// 13 of the 16 registers.
constexpr int64_t kAxpyHeads = 2;
constexpr int64_t kAxpySlices = 2;

#include "kernels/attention_ops_simd.inc"

}  // namespace

const AttentionOps& AttentionOpsAvx2() { return Ops(); }

}  // namespace swiftlet
