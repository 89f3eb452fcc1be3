#include "model/forward_context.h"

#include "core/check.h"
#include "core/str_cat.h"
#include "core/thread_pool.h"
#include "kernels/cuda/cuda_backend.h"
#include "model/forward_state.h"

namespace swiftlet {

const char* NameOf(ComputeDevice device) { return device == ComputeDevice::kCuda ? "cuda" : "cpu"; }

absl::StatusOr<ComputeDevice> ParseComputeDevice(std::string_view name) {
  if (name == "cpu") return ComputeDevice::kCpu;
  if (name == "cuda") return ComputeDevice::kCuda;
  return absl::InvalidArgumentError(StrCat("device '", name, "' is not one of: cpu, cuda"));
}

absl::StatusOr<DeviceMemory> QueryDeviceMemory(ComputeDevice device) {
  if (device == ComputeDevice::kCpu) return absl::FailedPreconditionError("the CPU's memory is the host's");
  // Forwards on the GPU run on GPU 0 (Create).
  SWIFTLET_ASSIGN_OR_RETURN(const CudaMemory memory, QueryCudaMemory(0));
  return DeviceMemory{memory.free_bytes, memory.total_bytes};
}

absl::StatusOr<ForwardContext> ForwardContext::Create(ComputeDevice device, int threads) {
  if (device == ComputeDevice::kCpu) return ForwardContext(threads);
  SWIFTLET_ASSIGN_OR_RETURN(std::unique_ptr<Backend> gpu, MakeCudaBackend(0));
  ForwardContext context(1);
  context.state_->backend = std::move(gpu);
  context.state_->device = ComputeDevice::kCuda;
  return context;
}

ForwardContext::ForwardContext(int threads) : state_(std::make_unique<State>()) {
  SWIFTLET_CHECK(threads >= 1);
  state_->threads = threads;
  state_->backend = MakeCpuBackend(threads);
}

ForwardContext::~ForwardContext() = default;
ForwardContext::ForwardContext(ForwardContext&&) noexcept = default;
ForwardContext& ForwardContext::operator=(ForwardContext&&) noexcept = default;

ForwardContext::ForwardContext(ComputePool& shared_pool) : state_(std::make_unique<State>()) {
  state_->threads = shared_pool.threads();
  state_->backend = MakeCpuBackend(shared_pool);
}

int ForwardContext::threads() const { return state_->threads; }

ComputeDevice ForwardContext::device() const { return state_->device; }

Backend& ForwardContext::backend() { return *state_->backend; }

}  // namespace swiftlet
