// Marks a function for both the CPU and, under nvcc, the GPU: code shared by
// a CUDA kernel and the CPU tests that check it compiles as plain C++ too.
#pragma once

#if defined(__CUDACC__)
#define SWIFTLET_HOST_DEVICE __host__ __device__
#else
#define SWIFTLET_HOST_DEVICE
#endif
