// AVX-512 logit weights (compiled with -mavx512f, and -mavx2 -mf16c for
// lanes16_zmm.inc; called only when CPUID reports them):
// logit_weights_simd.inc on ZMM registers, the same bits as the scalar twin.
#include "kernels/intrinsics.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernel_exp.h"
#include "kernels/logit_weights.h"

namespace swiftlet {
namespace {

#include "kernels/lanes16_zmm.inc"
#include "kernels/kernel_exp_zmm.inc"
#include "kernels/logit_weights_simd.inc"

}  // namespace

LogitWeightsFn LogitWeightsAvx512() { return LogitWeights; }
WeightBlockSumsFn WeightBlockSumsAvx512() { return WeightBlockSums; }

}  // namespace swiftlet
