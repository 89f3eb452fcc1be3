// The SIMD activation quantizers of each ISA, in files compiled with their
// flags.
#pragma once

#include "kernels/activation_quantize.h"

namespace swiftlet {

const ActivationQuantizers& ActivationQuantizersAvx2();
const ActivationQuantizers& ActivationQuantizersAvx512();

}  // namespace swiftlet
