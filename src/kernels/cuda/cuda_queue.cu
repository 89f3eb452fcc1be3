#include "kernels/cuda/cuda_queue.h"

#include <cstring>
#include <string>

#include "core/check.h"
#include "core/str_cat.h"

namespace swiftlet {
namespace {

cudaKernelNodeParams NodeParams(cuda_graphs::LaunchList& list, size_t i) {
  const cuda_graphs::LaunchShape& s = list.shape(i);
  cudaKernelNodeParams p{};
  p.func = const_cast<void*>(s.kernel);
  p.gridDim = dim3(s.grid.x, s.grid.y, s.grid.z);
  p.blockDim = dim3(s.block.x, s.block.y, s.block.z);
  p.sharedMemBytes = s.shared_bytes;
  p.kernelParams = list.ArgPointers(i);
  p.extra = nullptr;
  return p;
}

cudaStream_t MakeStream(int device) {
  CheckCuda(cudaSetDevice(device), "select the device");
  cudaStream_t stream = nullptr;
  // Non-blocking: other threads' work on the legacy default stream (another
  // backend's, a bandwidth measurement) neither waits for this one nor
  // breaks its order.
  CheckCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "create a stream");
  return stream;
}

}  // namespace

void CheckCuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    const std::string message = StrCat("CUDA ", what, ": ", cudaGetErrorString(e));
    internal::CheckFailed(__FILE__, __LINE__, message.c_str());
  }
}

CudaGraphExecutor::Graph& CudaGraphExecutor::Graph::operator=(Graph&& other) noexcept {
  std::swap(graph_, other.graph_);
  std::swap(exec_, other.exec_);
  std::swap(nodes_, other.nodes_);
  return *this;
}

CudaGraphExecutor::Graph::~Graph() {
  // A graph still running is freed when it finishes.
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
}

void CudaGraphExecutor::RunEager(cuda_graphs::LaunchList& list) {
  for (size_t i = 0; i < list.size(); ++i) {
    const cuda_graphs::LaunchShape& s = list.shape(i);
    CheckCuda(cudaLaunchKernel(s.kernel, dim3(s.grid.x, s.grid.y, s.grid.z), dim3(s.block.x, s.block.y, s.block.z),
                               list.ArgPointers(i), s.shared_bytes, stream_),
              list.name(i));
  }
}

CudaGraphExecutor::Graph CudaGraphExecutor::Build(cuda_graphs::LaunchList& list) {
  Graph g;
  CheckCuda(cudaGraphCreate(&g.graph_, 0), "create a graph");
  g.nodes_.resize(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    // A chain: each launch after the one before, as on the stream.
    const cudaKernelNodeParams p = NodeParams(list, i);
    CheckCuda(cudaGraphAddKernelNode(&g.nodes_[i], g.graph_, i == 0 ? nullptr : &g.nodes_[i - 1], i == 0 ? 0 : 1, &p),
              list.name(i));
  }
  CheckCuda(cudaGraphInstantiate(&g.exec_, g.graph_, 0), "instantiate a graph");
  return g;
}

void CudaGraphExecutor::Update(Graph& graph, cuda_graphs::LaunchList& list, size_t i) {
  const cudaKernelNodeParams p = NodeParams(list, i);
  CheckCuda(cudaGraphExecKernelNodeSetParams(graph.exec_, graph.nodes_[i], &p), list.name(i));
}

void CudaGraphExecutor::Launch(Graph& graph) { CheckCuda(cudaGraphLaunch(graph.exec_, stream_), "launch a graph"); }

CudaQueue::CudaQueue(int device, cuda_graphs::GraphOptions options)
    : device_(device), stream_(MakeStream(device)), executor_(stream_), graphs_(executor_, options) {
  CheckCuda(cudaMallocHost(reinterpret_cast<void**>(&staging_), kStagingBytes), "pinned staging memory");
  CheckCuda(cudaEventCreateWithFlags(&staged_, cudaEventDisableTiming), "create an event");
}

CudaQueue::~CudaQueue() {
  SynchronizeQuietly();
  cudaEventDestroy(staged_);
  cudaFreeHost(staging_);
  cudaStreamDestroy(stream_);
}

void CudaQueue::FlushLocked() {
  if (pending_.empty()) return;
  CheckCuda(cudaSetDevice(device_), "select the device");
  graphs_.Run(pending_);
  pending_.Clear();
}

std::unique_lock<std::mutex> CudaQueue::LockInOrder() {
  std::unique_lock<std::mutex> lock(mu_);
  FlushLocked();
  CheckCuda(cudaSetDevice(device_), "select the device");
  return lock;
}

void CudaQueue::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  FlushLocked();
}

void CudaQueue::CopyToDevice(void* dst, const void* host_src, size_t bytes) {
  const std::unique_lock<std::mutex> lock = LockInOrder();
  if (bytes > kStagingBytes) {
    // Weights, at load: from pageable memory the driver may still be
    // reading the source when the call returns, so wait for it.
    CheckCuda(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_), "upload");
    WaitLocked();
    return;
  }
  if (staging_used_ + bytes > kStagingBytes) {
    CheckCuda(cudaEventSynchronize(staged_), "upload");  // Every copy out of the area is done.
    staging_used_ = 0;
  }
  uint8_t* staged = staging_ + staging_used_;
  std::memcpy(staged, host_src, bytes);
  staging_used_ += (bytes + 63) / 64 * 64;
  CheckCuda(cudaMemcpyAsync(dst, staged, bytes, cudaMemcpyHostToDevice, stream_), "upload");
  CheckCuda(cudaEventRecord(staged_, stream_), "upload");
}

void CudaQueue::CopyToHost(void* host_dst, const void* src, size_t bytes) {
  const std::unique_lock<std::mutex> lock = LockInOrder();
  CheckCuda(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "download");
  WaitLocked();
}

void CudaQueue::WaitLocked() {
  CheckCuda(cudaStreamSynchronize(stream_), "wait for the GPU");
  staging_used_ = 0;  // Every copy out of it is done.
}

void CudaQueue::CopyWithin(void* dst, const void* src, size_t bytes) {
  const std::unique_lock<std::mutex> lock = LockInOrder();
  CheckCuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), "copy within the device");
}

void CudaQueue::Zero(void* dst, size_t bytes) {
  const std::unique_lock<std::mutex> lock = LockInOrder();
  CheckCuda(cudaMemsetAsync(dst, 0, bytes, stream_), "zero device memory");
}

void CudaQueue::Synchronize() {
  const std::unique_lock<std::mutex> lock = LockInOrder();
  WaitLocked();
}

void CudaQueue::SynchronizeQuietly() {
  std::lock_guard<std::mutex> lock(mu_);
  // Launches still recorded are issued (a failure there is a real error);
  // the wait's error is not, at exit.
  FlushLocked();
  if (cudaSetDevice(device_) == cudaSuccess && cudaStreamSynchronize(stream_) == cudaSuccess) staging_used_ = 0;
  cudaGetLastError();
}

cuda_graphs::GraphStats CudaQueue::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return graphs_.stats();
}

}  // namespace swiftlet
