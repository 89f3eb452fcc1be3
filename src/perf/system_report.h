// What `swiftlet inspect --system` prints: the CPU features found, the kernel
// ISA chosen (and how to cap it), the cores, per weight type which matmul
// kernel runs and in which layout, and the GPUs the CUDA backend sees.
#pragma once

#include <string>

namespace swiftlet {

// Lines ending in '\n'.
std::string SystemReport();

}  // namespace swiftlet
