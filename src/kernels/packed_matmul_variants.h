// The packed-layout kernels of each ISA (kernels/packed_weights.h), each in
// its own source file compiled with its own flags.
#pragma once

#include <cstdint>

#include "kernels/packed_weights.h"

namespace swiftlet {

// `groups` points at the first 16-row group to compute; n_groups of them,
// each group_bytes apart. Output row r of group k, activation row t goes to
// y[t * y_stride + 16 * k + r].
using PackedKernelFn = void (*)(const uint8_t* groups, int64_t n_groups, size_t group_bytes,
                                const PackedActivations& act, float* y, int64_t y_stride);

// Null where the ISA has no kernel for the type.
PackedKernelFn PackedKernelAvx2(TensorType type);
PackedKernelFn PackedKernelAvxVnni(TensorType type);
PackedKernelFn PackedKernelAvx512(TensorType type);
PackedKernelFn PackedKernelAvx512Vnni(TensorType type);

// The kernel `isa` runs for `type`, or null where there is none. Every one
// gives the same bits.
PackedKernelFn PackedKernelFor(KernelIsa isa, TensorType type);

}  // namespace swiftlet
