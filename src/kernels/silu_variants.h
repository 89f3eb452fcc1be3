// The SIMD twins of silu.cc, each in a file compiled with its ISA's flags.
#pragma once

#include "kernels/silu.h"

namespace swiftlet {

SiluMulFn SiluMulAvx2();
SiluMulFn SiluMulAvx512();

}  // namespace swiftlet
