// cuda_backend.h in a build without CUDA (no nvcc when it was configured).
#include "kernels/cuda/cuda_backend.h"

namespace swiftlet {

namespace {
constexpr char kNotBuilt[] =
    "this swiftlet was built without the CUDA backend (no nvcc found when it was configured)";
}  // namespace

bool CudaBackendBuilt() { return false; }

std::vector<CudaDeviceInfo> ListCudaDevices(std::string* why) {
  if (why != nullptr) *why = kNotBuilt;
  return {};
}

absl::StatusOr<double> MeasureCudaReadBandwidth(int, uint64_t) {
  return absl::FailedPreconditionError(kNotBuilt);
}

absl::StatusOr<CudaMemory> QueryCudaMemory(int) { return absl::FailedPreconditionError(kNotBuilt); }

bool IsPageLocked(const void*) { return false; }

CudaGraphCounts CudaGraphCountsOf(Backend&) { return {}; }

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int) {
  return absl::FailedPreconditionError(kNotBuilt);
}

}  // namespace swiftlet
