// The SIMD variants of the dot products in vec_dot.h. Each ISA lives in its
// own source file compiled with its own flags, so the binary runs on any
// x86-64; vec_dot.cc picks one table at start-up from CPUID. Every variant
// vectorizes only the integer block sums and then applies the block scales
// with exactly the scalar code's float operations, in the same order, so its
// results are bit-identical to the scalar specification.
#pragma once

#include <cstdint>

#include "core/tensor_type.h"

namespace swiftlet {

using VecDotFn = float (*)(const void* weight, const void* act, int64_t n);

// The variant's function for a weight type, or null where it has none (the
// scalar function is used then).
VecDotFn VecDotAvx2(TensorType weight_type);
VecDotFn VecDotAvxVnni(TensorType weight_type);
VecDotFn VecDotAvx512Vnni(TensorType weight_type);

}  // namespace swiftlet
