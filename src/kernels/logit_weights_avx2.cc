// AVX2 logit weights (compiled with -mavx2 -mf16c; called only when CPUID
// reports them): logit_weights_simd.inc on YMM pairs, the same bits as the
// scalar twin.
#include "kernels/intrinsics.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernel_exp.h"
#include "kernels/logit_weights.h"

namespace swiftlet {
namespace {

#include "kernels/lanes16_ymm.inc"
#include "kernels/kernel_exp_ymm.inc"
#include "kernels/logit_weights_simd.inc"

}  // namespace

LogitWeightsFn LogitWeightsAvx2() { return LogitWeights; }
WeightBlockSumsFn WeightBlockSumsAvx2() { return WeightBlockSums; }

}  // namespace swiftlet
