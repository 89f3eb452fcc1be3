// The CUDA backend: the same ops as the CPU backend (kernels/backend.h) on
// an NVIDIA GPU, with weights, activations and the KV cache in device
// memory. Built when CMake finds nvcc (SWIFTLET_CUDA=AUTO, the default);
// without it these functions say so.
//
// Each output row is computed from its own input row in a fixed order
// (batch invariance holds as on the CPU). Quantized weights see activations
// quantized in blocks of 32 as QuantizeRowQ8_0 does; sums are in other
// orders than the CPU's, so results agree with the CPU's within float
// rounding, not bit for bit. Matmul weights: F32, F16, BF16, Q8_0, Q4_0,
// Q4_K, Q5_K, Q6_K. Attention: head_dim <= 256 (kMaxCudaHeadDim). Kernel
// launches run as CUDA graphs where a run of them repeats (a decode step);
// SWIFTLET_CUDA_GRAPHS=0 launches each on its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "kernels/backend.h"

namespace swiftlet {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  uint64_t memory_bytes = 0;
  int compute_major = 0, compute_minor = 0;
};

// The largest head dimension the CUDA attention kernel holds per warp.
inline constexpr int64_t kMaxCudaHeadDim = 256;

// Whether this binary was built with the CUDA backend.
bool CudaBackendBuilt();

// The GPUs the CUDA runtime sees; empty without a driver or a GPU, or in a
// build without CUDA (`why`, when given, says which).
std::vector<CudaDeviceInfo> ListCudaDevices(std::string* why = nullptr);

// GPU `device`'s read bandwidth from its memory (HBM), in GB/s (1e9
// bytes/s): the best of several passes of a kernel streaming a buffer of
// `bytes` (1 GiB for a figure; far larger than the L2). For bench engine's
// limits on the GPU.
absl::StatusOr<double> MeasureCudaReadBandwidth(int device, uint64_t bytes = uint64_t{1} << 30);

// GPU `device`'s memory now (cudaMemGetInfo): free and total bytes.
struct CudaMemory {
  uint64_t free_bytes = 0, total_bytes = 0;
};
absl::StatusOr<CudaMemory> QueryCudaMemory(int device = 0);

// Whether p is host memory the CUDA runtime has page-locked (the CUDA
// backend's HostMemory gives such memory where the system allows it);
// false in a build without CUDA.
bool IsPageLocked(const void* p);

// How a CUDA backend's launches have run (kernels/cuda/launch_graphs.h):
// runs launched one by one, graphs built, runs replayed by a graph, and
// launches whose arguments a replay changed. Zeros for any other backend.
struct CudaGraphCounts {
  uint64_t eager = 0, built = 0, replayed = 0, updated_nodes = 0;
};
CudaGraphCounts CudaGraphCountsOf(Backend& backend);

// A backend on GPU `device`; FailedPrecondition naming the reason when
// there is no such GPU or the build has no CUDA backend.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device = 0);

}  // namespace swiftlet
