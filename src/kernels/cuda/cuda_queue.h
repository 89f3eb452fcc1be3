// The stream a CUDA backend's work runs on, in the order it was asked for.
// Kernel launches are recorded (launch_graphs.h) and issued when something
// must follow them: a copy, a download, freeing memory. A run of launches
// seen before is issued as one CUDA graph. The backend and the buffers it
// made share the queue (a buffer may outlive its backend), so a KV cache's
// copy-on-write is ordered after the step that filled the block. For .cu
// files only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cuda/launch_graphs.h"

namespace swiftlet {

// Aborts with CUDA's message: a failed launch or copy on a working device is
// a bug or a lost device, not an input error.
void CheckCuda(cudaError_t e, const char* what);

// Runs LaunchLists on a stream: launch by launch, or as CUDA graphs.
class CudaGraphExecutor {
 public:
  class Graph {
   public:
    Graph() = default;
    Graph(Graph&& other) noexcept { *this = std::move(other); }
    Graph& operator=(Graph&& other) noexcept;
    ~Graph();

   private:
    friend class CudaGraphExecutor;
    cudaGraph_t graph_ = nullptr;
    cudaGraphExec_t exec_ = nullptr;
    std::vector<cudaGraphNode_t> nodes_;
  };

  explicit CudaGraphExecutor(cudaStream_t stream) : stream_(stream) {}
  void RunEager(cuda_graphs::LaunchList& list);
  Graph Build(cuda_graphs::LaunchList& list);
  void Update(Graph& graph, cuda_graphs::LaunchList& list, size_t i);
  void Launch(Graph& graph);

 private:
  cudaStream_t stream_;
};

class CudaQueue {
 public:
  // A stream on GPU `device`; graphs as `options` say.
  CudaQueue(int device, cuda_graphs::GraphOptions options);
  ~CudaQueue();  // Waits for everything asked of it.
  CudaQueue(const CudaQueue&) = delete;
  CudaQueue& operator=(const CudaQueue&) = delete;

  int device() const { return device_; }

  // Records kernel<<<grid, block, shared_bytes>>>(args...): each argument
  // converted to its parameter's type, as a <<<>>> launch would, and kept
  // as bytes.
  template <typename... Params, typename... Args>
  void Launch(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
              Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args), "one argument per kernel parameter");
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.size() >= kMaxPending) FlushLocked();
    pending_.Begin({reinterpret_cast<const void*>(kernel), {grid.x, grid.y, grid.z}, {block.x, block.y, block.z},
                    static_cast<uint32_t>(shared_bytes)},
                   name);
    (AddArg<std::remove_cv_t<Params>>(std::forward<Args>(args)), ...);
  }

  // Issues the launches recorded so far.
  void Flush();
  // Copies, each ordered after everything asked before it. The host's
  // source may be reused as soon as CopyToDevice returns.
  void CopyToDevice(void* dst, const void* host_src, size_t bytes);
  void CopyToHost(void* host_dst, const void* src, size_t bytes);  // Returns when done.
  void CopyWithin(void* dst, const void* src, size_t bytes);
  void Zero(void* dst, size_t bytes);
  // Returns when everything asked so far is done.
  void Synchronize();
  // The same for destructors: errors (a runtime already unloading at exit)
  // are ignored rather than fatal.
  void SynchronizeQuietly();

  cuda_graphs::GraphStats stats();

 private:
  // More launches than any step makes (an 80-layer model's is ~1,700):
  // issued early rather than held.
  static constexpr size_t kMaxPending = 8192;

  template <typename P, typename A>
  void AddArg(A&& a) {
    static_assert(std::is_trivially_copyable_v<P>, "kernel parameters are copied as bytes");
    P value = std::forward<A>(a);
    // Padding bytes are undefined: cleared, equal values compare equal
    // (launch_graphs.h compares arguments by their bytes).
    __builtin_clear_padding(&value);
    pending_.AddArg(&value, sizeof(P), alignof(P));
  }
  void FlushLocked();
  void WaitLocked();
  // Locks the queue, issues what was recorded (what the caller does next
  // must follow it) and selects the device for the caller's CUDA calls.
  std::unique_lock<std::mutex> LockInOrder();

  // Small uploads (a step's token ids, positions, block tables) go through
  // pinned memory: the copy is then truly asynchronous, and the caller's
  // memory is free at once. The area is reused from its start once the
  // stream has been waited for, or after waiting for the last copy out of
  // it (`staged_`) when full.
  static constexpr size_t kStagingBytes = size_t{1} << 20;

  std::mutex mu_;
  int device_;
  cudaStream_t stream_ = nullptr;
  uint8_t* staging_ = nullptr;
  size_t staging_used_ = 0;
  cudaEvent_t staged_ = nullptr;
  cuda_graphs::LaunchList pending_;
  CudaGraphExecutor executor_;
  cuda_graphs::LaunchGraphs<CudaGraphExecutor> graphs_;
};

}  // namespace swiftlet
