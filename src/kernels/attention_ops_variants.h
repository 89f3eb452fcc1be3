// The SIMD AttentionOps of each ISA, in files compiled with their flags.
#pragma once

#include "kernels/attention_ops.h"

namespace swiftlet {

const AttentionOps& AttentionOpsAvx2();
const AttentionOps& AttentionOpsAvx512();

}  // namespace swiftlet
