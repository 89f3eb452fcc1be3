// What one thread needs to run forward passes: the compute backend (the CPU
// backend's pool of `threads` threads, the caller included) and the scratch
// buffers of a step, reused across steps. Model::Forward takes it.
//
// Not thread-safe: one context per thread that runs forwards (the engine
// thread, the embedding worker, a tool). The model it is used with must
// outlive no particular context; a context may serve any model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace swiftlet {

class Backend;      // kernels/backend.h
class ComputePool;  // core/thread_pool.h

// Where a model's weights live and its forwards run: the CPU, or one CUDA
// GPU (kernels/cuda) by its index among those the process sees
// (CUDA_VISIBLE_DEVICES applies first; `swiftlet inspect --system` lists
// them).
struct ComputeDevice {
  enum class Kind { kCpu, kCuda };
  Kind kind = Kind::kCpu;
  int gpu = 0;  // kCuda's index; 0 for the CPU.

  static constexpr ComputeDevice Cpu() { return {}; }
  static constexpr ComputeDevice Cuda(int gpu = 0) { return {Kind::kCuda, gpu}; }
  bool is_cuda() const { return kind == Kind::kCuda; }
  friend bool operator==(const ComputeDevice&, const ComputeDevice&) = default;
};
std::string NameOf(ComputeDevice device);  // "cpu", "cuda:0"
// "cpu", "cuda" (GPU 0) or "cuda:N" (N a GPU index, 0 to 1023; whether
// that GPU exists is found when it is used); InvalidArgument naming the
// choices otherwise.
absl::StatusOr<ComputeDevice> ParseComputeDevice(std::string_view name);

// Bytes free now and in all in the memory a forward on the GPU computes in
// (cudaMemGetInfo); FailedPrecondition for the CPU (kv/kv_memory.h reads
// RAM), or where there is no GPU.
struct DeviceMemory {
  uint64_t free_bytes = 0, total_bytes = 0;
};
absl::StatusOr<DeviceMemory> QueryDeviceMemory(ComputeDevice device);

class ForwardContext {
 public:
  // A context on `device`: the CPU on `threads` threads (>= 1), or a GPU
  // (FailedPrecondition naming why when there is no such GPU, or the build
  // has no CUDA backend).
  static absl::StatusOr<ForwardContext> Create(ComputeDevice device, int threads);
  // A CPU backend on `threads` threads (>= 1, checked).
  explicit ForwardContext(int threads);
  // A CPU backend on a pool shared with other contexts, which must not
  // run forwards at the same time (engine/step_gate.h); the pool must
  // outlive the context.
  explicit ForwardContext(ComputePool& shared_pool);
  ~ForwardContext();
  ForwardContext(ForwardContext&&) noexcept;
  ForwardContext& operator=(ForwardContext&&) noexcept;

  int threads() const;
  ComputeDevice device() const;
  // The backend forwards run on: a KV cache for them is made in its memory
  // (kv/paged_kv_cache.h).
  Backend& backend();

  // The backend and scratch (model/forward_state.h), for Model::Forward.
  struct State;
  State& state() { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

}  // namespace swiftlet
