// The SIMD twins of argmax_row.h, each in a file compiled with its ISA's
// flags. Both take two passes, where the scan's one holds each step on the
// last (a compare of the value it holds, then a move): the largest non-NaN
// value by lanes of max (vmaxps gives its second operand when either is
// NaN, so a NaN in the row never enters the accumulators, which start at
// -inf), then, when it is above -inf, the first index equal to it (-0
// equals +0, as in the scan).
#pragma once

#include "kernels/argmax_row.h"

namespace swiftlet {

ArgMaxRowFn ArgMaxRowAvx2();
ArgMaxRowFn ArgMaxRowAvx512();

}  // namespace swiftlet
