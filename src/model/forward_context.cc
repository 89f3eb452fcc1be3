#include "model/forward_context.h"

#include <charconv>
#include <system_error>

#include "core/check.h"
#include "core/str_cat.h"
#include "core/thread_pool.h"
#include "kernels/cuda/cuda_backend.h"
#include "model/forward_state.h"

namespace swiftlet {

std::string NameOf(ComputeDevice device) {
  return device.is_cuda() ? StrCat("cuda:", device.gpu) : std::string("cpu");
}

absl::StatusOr<ComputeDevice> ParseComputeDevice(std::string_view name) {
  constexpr int kMaxGpu = 1023;
  if (name == "cpu") return ComputeDevice::Cpu();
  if (name == "cuda") return ComputeDevice::Cuda();
  if (name.starts_with("cuda:")) {
    // Digits only (from_chars takes no sign but '-', no space; it reports
    // overflow), and the whole rest of the name.
    const std::string_view digits = name.substr(5);
    int gpu = -1;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), gpu);
    if (error == std::errc() && end == digits.data() + digits.size() && digits[0] != '-' && gpu <= kMaxGpu) {
      return ComputeDevice::Cuda(gpu);
    }
  }
  return absl::InvalidArgumentError(StrCat("device '", name.substr(0, 64), "' is not one of: cpu, cuda, cuda:N (N a GPU index, 0 to ",
                                           kMaxGpu, ")"));
}

absl::StatusOr<DeviceMemory> QueryDeviceMemory(ComputeDevice device) {
  if (!device.is_cuda()) return absl::FailedPreconditionError("the CPU's memory is the host's");
  SWIFTLET_ASSIGN_OR_RETURN(const CudaMemory memory, QueryCudaMemory(device.gpu));
  return DeviceMemory{memory.free_bytes, memory.total_bytes};
}

absl::StatusOr<ForwardContext> ForwardContext::Create(ComputeDevice device, int threads) {
  if (!device.is_cuda()) return ForwardContext(threads);
  SWIFTLET_ASSIGN_OR_RETURN(std::unique_ptr<Backend> gpu, MakeCudaBackend(device.gpu));
  ForwardContext context(1);
  context.state_->backend = std::move(gpu);
  context.state_->device = device;
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
