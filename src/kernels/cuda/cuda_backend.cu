// The CUDA backend (cuda_backend.h). Everything runs on one stream per
// backend (cuda_queue.h), shared with the buffers it made, so every op,
// copy and buffer operation is ordered after the ones called before it, as
// backend.h promises; Download waits for them. Ops record their launches,
// which run when a copy must follow them: a run seen before as one CUDA
// graph (launch_graphs.h).
//
// The matmuls' kernels are in matmul_kernels.cu, attention's in
// attention_kernels.cu; the small ops' are here (RMSNorm: one block to each
// row). Each reduces in a fixed order that does not depend on the batch, so
// a row's result is the same in any batch.
#include "kernels/cuda/cuda_backend.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>

#include "core/argmax.h"
#include "core/check.h"
#include "core/str_cat.h"
#include "kernels/cuda/attention_kernels.h"
#include "kernels/cuda/cuda_queue.h"
#include "kernels/cuda/device_math.h"
#include "kernels/cuda/matmul_kernels.h"
#include "kernels/cuda/weight_slices.h"
#include "kernels/quant_blocks.h"

namespace swiftlet {
namespace {

using cuda_device::Blocks;
using cuda_device::Element;
using cuda_device::KvRow;
using cuda_device::kWarp;
using cuda_device::QuantizeLaneQ8;
using cuda_matmul::QuantizedActivations;
using cuda_matmul::Sliced;

// One thread per (row, block, slice) of the rows asked for.
template <typename Slice>
__global__ void GetRowsKernel(const uint8_t* table, size_t row_bytes, int64_t n_in, const int32_t* ids, int64_t n,
                              float* out) {
  const int64_t per_row = n_in / Slice::kElems * Slice::kSlices;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * per_row) return;
  const int64_t t = i / per_row, b = i % per_row / Slice::kSlices;
  const int s = static_cast<int>(i % Slice::kSlices);
  float w[Slice::kWeights];
  Slice::Decode(table + static_cast<size_t>(ids[t]) * row_bytes + static_cast<size_t>(b) * Slice::kBytes, s, w);
  float* o = out + t * n_in + b * Slice::kElems;
  for (int k = 0; k < Slice::kWeights; ++k) o[Slice::Index(s, k)] = w[k];
}

__global__ void GetRowsElementKernel(TensorType type, const uint8_t* table, size_t row_bytes, int64_t n_in,
                                     const int32_t* ids, int64_t n, float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * n_in) return;
  const int64_t t = i / n_in, e = i % n_in;
  out[i] = Element(type, table + static_cast<size_t>(ids[t]) * row_bytes, e);
}

// One block per row: the sum of squares in a fixed tree order.
__global__ void RmsNormKernel(const float* x, const float* weight, int64_t n, float eps, float* y) {
  extern __shared__ float partial[];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * n;
  float* out = y + static_cast<int64_t>(blockIdx.x) * n;
  float ss = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) ss += row[i] * row[i];
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float scale = 1.0f / sqrtf(partial[0] / static_cast<float>(n) + eps);
  // x and y may be the same rows: every thread has read its elements'
  // squares before the barrier above, and each writes only the elements it
  // reads here.
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = row[i] * scale * weight[i];
}

// One thread per (row, head, rotated pair); angles in double, as the CPU
// computes them.
__global__ void RopeKernel(float* x, int64_t n_rows, const int32_t* positions, RopeShape s) {
  const int64_t half = s.rope_dim / 2;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_rows * s.n_head * half) return;
  const int64_t t = i / (s.n_head * half), h = (i / half) % s.n_head, p = i % half;
  double theta = static_cast<double>(positions[t]) * s.position_scale *
                 pow(static_cast<double>(s.freq_base), -2.0 * static_cast<double>(p) / static_cast<double>(s.rope_dim));
  if (s.freq_factors != nullptr) theta /= s.freq_factors[p];
  const float c = static_cast<float>(cos(theta)), sn = static_cast<float>(sin(theta));
  float* head = x + (t * s.n_head + h) * s.head_dim;
  const int64_t a = s.neox ? p : 2 * p, b = s.neox ? p + half : 2 * p + 1;
  const float xa = head[a], xb = head[b];
  head[a] = xa * c - xb * sn;
  head[b] = xa * sn + xb * c;
}

// F32 and F16 rows: one thread per element.
__global__ void StoreKvFloatKernel(const float* k, const float* v, int64_t n_rows, const int32_t* positions,
                                   KvBatch kv, int64_t kv_dim) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_rows * kv_dim) return;
  const int64_t t = i / kv_dim, e = i % kv_dim;
  uint8_t* krow = KvRow(kv, t, positions[t], kv.layer.k_offset);
  uint8_t* vrow = KvRow(kv, t, positions[t], kv.layer.v_offset);
  if (kv.layer.type == TensorType::kF16) {
    reinterpret_cast<__half*>(krow)[e] = __float2half_rn(k[i]);
    reinterpret_cast<__half*>(vrow)[e] = __float2half_rn(v[i]);
  } else {
    reinterpret_cast<float*>(krow)[e] = k[i];
    reinterpret_cast<float*>(vrow)[e] = v[i];
  }
}

// Q8_0 rows: one warp per (row, block of 32), K and V alike, quantized as
// QuantizeRowQ8_0 does (scale amax / 127, round to nearest).
__global__ void StoreKvQ8Kernel(const float* k, const float* v, int64_t n_rows, const int32_t* positions,
                                KvBatch kv, int64_t kv_dim) {
  const int64_t blocks = kv_dim / BlockQ8_0::kElems;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (warp >= n_rows * blocks * 2) return;
  const bool value = warp % 2 == 1;
  const int64_t t = warp / 2 / blocks, b = warp / 2 % blocks;
  const float x = (value ? v : k)[t * kv_dim + b * BlockQ8_0::kElems + lane];
  uint16_t d;
  const int8_t q = QuantizeLaneQ8(x, &d);
  BlockQ8_0* row = reinterpret_cast<BlockQ8_0*>(
      KvRow(kv, t, positions[t], value ? kv.layer.v_offset : kv.layer.k_offset));
  row[b].qs[lane] = q;
  if (lane == 0) row[b].d = d;
}

__global__ void SiluMulKernel(float* gate, const float* up, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  gate[i] = g / (1.0f + expf(-g)) * up[i];
}

__global__ void AddKernel(float* y, const float* x, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

__global__ void AddBiasKernel(float* y, const float* bias, int64_t n, int64_t n_rows) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n * n_rows) y[i] += bias[i % n];
}

__global__ void GatherRowsKernel(const float* x, int64_t n, const int32_t* rows, int64_t count, float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n * count) out[i] = x[static_cast<int64_t>(rows[i / n]) * n + i % n];
}

// One block per row: each thread keeps the best of its strided elements,
// then a butterfly per warp and one across the warps (core/argmax.h:
// any merge order gives the scan's answer).
__device__ ArgMaxCandidate WarpBest(ArgMaxCandidate c) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const ArgMaxCandidate other{__shfl_xor_sync(0xffffffffu, c.value, offset),
                                __shfl_xor_sync(0xffffffffu, c.index, offset)};
    c = ArgMaxBetter(c, other);
  }
  return c;
}

__global__ void ArgMaxKernel(const float* x, int64_t n, int32_t* out) {
  __shared__ ArgMaxCandidate warps[kWarp];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * n;
  ArgMaxCandidate best = ArgMaxNone();
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    best = ArgMaxBetter(best, {row[i], static_cast<int32_t>(i)});
  }
  best = WarpBest(best);
  const unsigned warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if (lane == 0) warps[warp] = best;
  __syncthreads();
  if (warp != 0) return;
  best = WarpBest(lane < blockDim.x / kWarp ? warps[lane] : ArgMaxNone());
  if (lane == 0) out[blockIdx.x] = ArgMaxOfBest(best);
}

// Every thread reads 16-byte words in a grid-stride loop; the XOR of what
// it read goes to `sink` only when it is a value no buffer holds (never), so
// the loads cannot be dropped and nothing is written.
__global__ void ReadKernel(const uint4* data, int64_t n, uint32_t impossible, uint32_t* sink) {
  uint32_t x = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint4 v = data[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == impossible) *sink = x;
}

// Memory on the GPU, freed once the work asked of its queue before is done.
class CudaBuffer final : public DeviceBuffer {
 public:
  CudaBuffer(std::shared_ptr<CudaQueue> queue, uint8_t* data, size_t bytes)
      : queue_(std::move(queue)), data_(data), bytes_(bytes) {}
  ~CudaBuffer() override {
    queue_->SynchronizeQuietly();
    cudaFree(data_);
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  uint8_t* data() override { return data_; }
  size_t bytes() const override { return bytes_; }
  void CopyWithin(size_t dst, size_t src, size_t bytes) override {
    SWIFTLET_CHECK(dst + bytes <= bytes_ && src + bytes <= bytes_);
    queue_->CopyWithin(data_ + dst, data_ + src, bytes);
  }
  void Zero(size_t offset, size_t bytes) override {
    SWIFTLET_CHECK(offset + bytes <= bytes_);
    queue_->Zero(data_ + offset, bytes);
  }

 private:
  std::shared_ptr<CudaQueue> queue_;
  uint8_t* data_;
  size_t bytes_;
};

class CudaWeight final : public ResidentWeight {
 public:
  CudaWeight(std::unique_ptr<DeviceBuffer> memory, const WeightView& view)
      : memory_(std::move(memory)), view_(view) {}
  const WeightView& view() const override { return view_; }
  size_t bytes() const override { return memory_->bytes(); }

 private:
  std::unique_ptr<DeviceBuffer> memory_;
  WeightView view_;
};

// Page-locked host memory (cudaHostAlloc) for the rows a forward's
// Download fills: the copy engine writes it directly, at the bus's rate.
// Where the system locks no more pages, plain memory instead (the copy is
// then only slower, through the driver's staging, as before).
class PinnedHostMemory final : public HostMemorySource {
 public:
  // Portable: page-locked for every device's context, so it does not
  // matter which device the allocating thread has current.
  void* Allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) == cudaSuccess) return p;
    cudaGetLastError();  // Not sticky; the fallback below is the answer.
    p = ::operator new(bytes);
    try {
      const std::lock_guard<std::mutex> lock(mu_);
      pageable_.insert(p);
    } catch (...) {
      ::operator delete(p);
      throw;
    }
    return p;
  }

  void Free(void* p, size_t) noexcept override {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      if (pageable_.erase(p) > 0) {
        ::operator delete(p);
        return;
      }
    }
    // At exit the runtime may be unloading already; the memory goes with
    // the process then, and the error is nobody's.
    if (cudaFreeHost(p) != cudaSuccess) cudaGetLastError();
  }

 private:
  std::mutex mu_;
  std::unordered_set<void*> pageable_;  // What Allocate could not lock.
};

class CudaBackend final : public Backend {
 public:
  // tensor_cores: the GPU runs the integer mma (compute capability 8.0 and
  // later); without it the quantized types take the dp4a kernel.
  CudaBackend(int device, cuda_matmul::MatMulKernels kernels, cuda_graphs::GraphOptions graphs)
      : device_(device),
        kernels_(kernels),
        queue_(std::make_shared<CudaQueue>(device, graphs)),
        host_memory_(std::make_shared<PinnedHostMemory>()) {}
  // Its work is done once it is gone (backend.h): a model's weights are
  // uploaded through a backend of their own, and read on the forward
  // context's stream.
  ~CudaBackend() override { queue_->SynchronizeQuietly(); }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::unique_ptr<DeviceBuffer> Allocate(size_t bytes) override {
    CheckCuda(cudaSetDevice(device_), "select the device");
    void* p = nullptr;
    if (cudaMalloc(&p, std::max<size_t>(bytes, 1)) != cudaSuccess) {
      cudaGetLastError();  // Clear the sticky-free allocation error.
      return nullptr;
    }
    return std::make_unique<CudaBuffer>(queue_, static_cast<uint8_t*>(p), bytes);
  }
  bool SharesHostMemory() const override { return false; }
  cuda_graphs::GraphStats graph_stats() { return queue_->stats(); }
  void Upload(void* dst, const void* host_src, size_t bytes) override { queue_->CopyToDevice(dst, host_src, bytes); }
  void Flush() override { queue_->Flush(); }
  void Download(void* host_dst, const void* src, size_t bytes) override { queue_->CopyToHost(host_dst, src, bytes); }
  std::shared_ptr<HostMemorySource> HostMemory() override { return host_memory_; }

  absl::StatusOr<std::unique_ptr<ResidentWeight>> PrepareWeight(const WeightView& w, WeightUse,
                                                                int) override {
    if (!cuda_slices::WithSlice(w.type, [](auto) {})) {
      return absl::UnimplementedError(
          StrCat("the CUDA backend does not compute with ", NameOf(w.type), " weights yet"));
    }
    SWIFTLET_CHECK(w.layout == WeightLayout::kRows);
    // Rows the slices do not take are read element by element, which only
    // the float types can be.
    SWIFTLET_CHECK(Sliced(w) || w.type == TensorType::kF32 || w.type == TensorType::kF16 ||
                   w.type == TensorType::kBF16);
    const size_t bytes = static_cast<size_t>(w.n_out) * w.row_bytes;
    std::unique_ptr<DeviceBuffer> memory = Allocate(bytes);
    if (memory == nullptr) {
      return absl::ResourceExhaustedError(StrCat("the GPU has no room for a weight of ", bytes, " bytes"));
    }
    Upload(memory->data(), w.data, bytes);
    WeightView view = w;
    view.data = memory->data();
    view.device = Device::kCuda;
    return std::unique_ptr<ResidentWeight>(std::make_unique<CudaWeight>(std::move(memory), view));
  }

  void MatMul(const WeightView& w, const float* x, int64_t n_rows, float* y) override {
    const MatMulJob job{w, y};
    MatMuls({&job, 1}, x, n_rows);
  }

  // x is quantized once for all the jobs with quantized weights, in as many
  // rows at a time as the scratch memory holds: rows are independent, so
  // a smaller chunk changes no result.
  void MatMuls(std::span<const MatMulJob> jobs, const float* x, int64_t n_rows) override {
    if (n_rows == 0 || jobs.empty()) return;
    const int64_t n_in = jobs[0].w.n_in;
    bool integer = false;
    for (const MatMulJob& job : jobs) {
      SWIFTLET_CHECK(job.w.device == Device::kCuda && job.w.n_in == n_in);
      integer = integer || cuda_matmul::IntegerDot(job.w);
    }
    int64_t chunk = n_rows;
    while (integer && !EnsureScratch(ScratchBytes(chunk, n_in)) && chunk > 1) chunk = (chunk + 1) / 2;
    // The GPU has no room for one row's quants.
    SWIFTLET_CHECK(!integer || (activations_ != nullptr && activations_->bytes() >= ScratchBytes(chunk, n_in)));
    for (int64_t first = 0; first < n_rows; first += chunk) {
      const int64_t rows = std::min(chunk, n_rows - first);
      const float* xs = x + first * n_in;
      const QuantizedActivations* xq = integer ? Quantize(xs, rows, n_in) : nullptr;
      for (const MatMulJob& job : jobs) {
        cuda_matmul::LaunchMatMul(*queue_, job.w, xs, xq, rows, job.y + first * job.w.n_out, kernels_);
      }
    }
  }

  void RmsNorm(const float* x, const float* weight, int64_t n, int64_t n_rows, float eps, float* y) override {
    if (n_rows == 0) return;
    constexpr int kThreads = 256;  // A power of two: the tree sum halves it.
    queue_->Launch("RmsNorm", RmsNormKernel, static_cast<unsigned>(n_rows), kThreads, kThreads * sizeof(float), x, weight, n, eps, y);
  }

  void Rope(float* x, int64_t n_rows, const int32_t* positions, const RopeShape& shape) override {
    const int64_t n = n_rows * shape.n_head * (shape.rope_dim / 2);
    if (n == 0) return;
    queue_->Launch("Rope", RopeKernel, Blocks(n, 256), 256, 0, x, n_rows, positions, shape);
  }

  void StoreKv(const float* k, const float* v, int64_t n_rows, const int32_t* positions, const KvBatch& kv,
               int64_t kv_dim) override {
    if (n_rows == 0) return;
    if (kv.layer.type == TensorType::kQ8_0) {
      const int64_t threads = n_rows * (kv_dim / BlockQ8_0::kElems) * 2 * kWarp;
      queue_->Launch("StoreKv", StoreKvQ8Kernel, Blocks(threads, 256), 256, 0, k, v, n_rows, positions, kv, kv_dim);
    } else {
      queue_->Launch("StoreKv", StoreKvFloatKernel, Blocks(n_rows * kv_dim, 256), 256, 0, k, v, n_rows, positions, kv, kv_dim);
    }
  }

  void Attention(const float* q, int64_t n_rows, const int32_t* positions, const KvBatch& kv,
                 const AttentionShape& shape, float* out) override {
    cuda_attention::LaunchAttention(*queue_, q, n_rows, positions, kv, shape, out);
  }

  void SiluMul(float* gate, const float* up, int64_t n) override {
    if (n == 0) return;
    queue_->Launch("SiluMul", SiluMulKernel, Blocks(n, 256), 256, 0, gate, up, n);
  }

  void Add(float* y, const float* x, int64_t n) override {
    if (n == 0) return;
    queue_->Launch("Add", AddKernel, Blocks(n, 256), 256, 0, y, x, n);
  }

  void AddBias(float* y, const float* bias, int64_t n, int64_t n_rows) override {
    if (n * n_rows == 0) return;
    queue_->Launch("AddBias", AddBiasKernel, Blocks(n * n_rows, 256), 256, 0, y, bias, n, n_rows);
  }

  void GatherRows(const float* x, int64_t n, const int32_t* rows, int64_t count, float* out) override {
    if (n * count == 0) return;
    queue_->Launch("GatherRows", GatherRowsKernel, Blocks(n * count, 256), 256, 0, x, n, rows, count, out);
  }

  void ArgMax(const float* x, int64_t n, int64_t n_rows, int32_t* out) override {
    SWIFTLET_CHECK(n > 0 && n <= INT32_MAX);
    if (n_rows == 0) return;
    constexpr int kThreads = 512;  // Whole warps, at most 32 of them.
    queue_->Launch("ArgMax", ArgMaxKernel, static_cast<unsigned>(n_rows), kThreads, 0, x, n, out);
  }

  void GetRows(const WeightView& table, const int32_t* ids, int64_t n, float* out) override {
    SWIFTLET_CHECK(table.device == Device::kCuda);
    if (n == 0) return;
    if (Sliced(table)) {
      cuda_slices::WithSlice(table.type, [&](auto slice) {
        using S = decltype(slice);
        const int64_t threads = n * (table.n_in / S::kElems) * S::kSlices;
        queue_->Launch("GetRows", GetRowsKernel<S>, Blocks(threads, 256), 256, 0, table.data, table.row_bytes, table.n_in, ids, n, out);
      });
    } else {
      queue_->Launch("GetRows", GetRowsElementKernel, Blocks(n * table.n_in, 256), 256, 0, table.type, table.data, table.row_bytes, table.n_in, ids, n, out);
    }
  }

 private:
  // Scratch bytes for n_rows rows of quantized x: quants, then (at a
  // 256-byte boundary) a float scale per block of 32, then its quants' sum.
  static size_t ScratchBytes(int64_t n_rows, int64_t n_in) {
    const size_t n = static_cast<size_t>(n_rows * n_in);
    return (n + 255) / 256 * 256 + 2 * (n / cuda_slices::kActivationBlock) * sizeof(float);
  }

  // Whether the scratch holds `bytes`, growing it by half again when it
  // must (or to exactly `bytes` when that much more does not fit). When
  // neither fits, the scratch it had stays, for fewer rows at a time.
  bool EnsureScratch(size_t bytes) {
    if (activations_ != nullptr && activations_->bytes() >= bytes) return true;
    const size_t grown = activations_ == nullptr ? bytes : std::max(bytes, activations_->bytes() / 2 * 3);
    std::unique_ptr<DeviceBuffer> larger = Allocate(grown);
    if (larger == nullptr && grown > bytes) larger = Allocate(bytes);
    if (larger == nullptr) return false;
    activations_ = std::move(larger);  // The old one is freed once the launches reading it are done.
    return true;
  }

  // x (n_rows rows of n_in) quantized into the scratch, which holds them.
  const QuantizedActivations* Quantize(const float* x, int64_t n_rows, int64_t n_in) {
    const int64_t blocks = n_rows * n_in / cuda_slices::kActivationBlock;
    const size_t scales_at = (static_cast<size_t>(n_rows * n_in) + 255) / 256 * 256;
    SWIFTLET_CHECK(activations_ != nullptr && activations_->bytes() >= ScratchBytes(n_rows, n_in));
    int8_t* q = reinterpret_cast<int8_t*>(activations_->data());
    float* d = reinterpret_cast<float*>(activations_->data() + scales_at);
    float* sums = d + blocks;
    quantized_ = {q, d, sums};
    cuda_matmul::LaunchQuantize(*queue_, x, blocks, q, d, sums);
    return &quantized_;
  }

  int device_;
  cuda_matmul::MatMulKernels kernels_;
  std::shared_ptr<CudaQueue> queue_;  // Declared before what it must outlive.
  std::shared_ptr<PinnedHostMemory> host_memory_;
  std::unique_ptr<DeviceBuffer> activations_;  // Quantized x: quants, scales, quant sums (ScratchBytes).
  QuantizedActivations quantized_{};
};

}  // namespace

bool CudaBackendBuilt() { return true; }

std::vector<CudaDeviceInfo> ListCudaDevices(std::string* why) {
  std::vector<CudaDeviceInfo> out;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why != nullptr) *why = StrCat("CUDA: ", cudaGetErrorString(e));
    cudaGetLastError();
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    out.push_back({i, p.name, static_cast<uint64_t>(p.totalGlobalMem), p.major, p.minor});
  }
  if (out.empty() && why != nullptr) *why = "CUDA: no GPU found";
  return out;
}

absl::StatusOr<double> MeasureCudaReadBandwidth(int device, uint64_t bytes) {
  SWIFTLET_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, MakeCudaBackend(device));
  std::unique_ptr<DeviceBuffer> buffer = backend->Allocate(bytes);
  std::unique_ptr<DeviceBuffer> sink = backend->Allocate(sizeof(uint32_t));
  if (buffer == nullptr || sink == nullptr) {
    return absl::ResourceExhaustedError(StrCat("no room on the GPU for a ", bytes, "-byte bandwidth buffer"));
  }
  // A pattern whose XOR over any thread's words is never all ones.
  CheckCuda(cudaMemset(buffer->data(), 0x11, bytes), "fill the bandwidth buffer");
  int sms = 0;
  CheckCuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "count SMs");
  const int64_t words = static_cast<int64_t>(bytes / sizeof(uint4));
  cudaEvent_t start, stop;
  CheckCuda(cudaEventCreate(&start), "event");
  CheckCuda(cudaEventCreate(&stop), "event");
  double best = 0;
  for (int pass = 0; pass < 6; ++pass) {  // The first warms up.
    CheckCuda(cudaEventRecord(start), "event");
    ReadKernel<<<sms * 8, 512>>>(reinterpret_cast<const uint4*>(buffer->data()), words, 0xffffffffu,
                                 reinterpret_cast<uint32_t*>(sink->data()));
    CheckCuda(cudaGetLastError(), "bandwidth read");
    CheckCuda(cudaEventRecord(stop), "event");
    CheckCuda(cudaEventSynchronize(stop), "event");
    float ms = 0;
    CheckCuda(cudaEventElapsedTime(&ms, start, stop), "event");
    if (pass > 0 && ms > 0) best = std::max(best, static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

namespace {

// GPU `device` by its CUDA number (ListCudaDevices leaves out a GPU whose
// properties cannot be read, so a number is not a position in the list),
// or FailedPrecondition saying why there is none.
absl::StatusOr<CudaDeviceInfo> FindCudaDevice(int device) {
  std::string why;
  const std::vector<CudaDeviceInfo> devices = ListCudaDevices(&why);
  for (const CudaDeviceInfo& d : devices) {
    if (d.index == device) return d;
  }
  return absl::FailedPreconditionError(devices.empty() ? why
                                                       : StrCat("no GPU ", device, ": ", devices.size(), " found"));
}

}  // namespace

absl::StatusOr<CudaMemory> QueryCudaMemory(int device) {
  SWIFTLET_RETURN_IF_ERROR(FindCudaDevice(device).status());
  // cudaMemGetInfo answers for the calling thread's current device.
  int current = 0;
  CheckCuda(cudaGetDevice(&current), "current device");
  CheckCuda(cudaSetDevice(device), "select the device");
  size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t e = cudaMemGetInfo(&free_bytes, &total_bytes);
  CheckCuda(cudaSetDevice(current), "select the device");
  if (e != cudaSuccess) {
    cudaGetLastError();
    return absl::UnavailableError(StrCat("CUDA: memory of GPU ", device, ": ", cudaGetErrorString(e)));
  }
  return CudaMemory{free_bytes, total_bytes};
}

bool IsPageLocked(const void* p) {
  unsigned int flags = 0;
  if (cudaHostGetFlags(&flags, const_cast<void*>(p)) == cudaSuccess) return true;
  cudaGetLastError();  // Not page-locked: the answer, not an error to keep.
  return false;
}

CudaGraphCounts CudaGraphCountsOf(Backend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (cuda == nullptr) return {};
  const cuda_graphs::GraphStats s = cuda->graph_stats();
  return {s.eager, s.built, s.replayed, s.updated_nodes};
}

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device) {
  SWIFTLET_ASSIGN_OR_RETURN(const CudaDeviceInfo info, FindCudaDevice(device));
  CheckCuda(cudaSetDevice(device), "select the device");
  // The kernels are built for CMAKE_CUDA_ARCHITECTURES (sm_90 by default);
  // on another GPU the first launch would fail: say so here instead.
  cudaFuncAttributes attributes{};
  if (const cudaError_t e = cudaFuncGetAttributes(&attributes, AddKernel); e != cudaSuccess) {
    cudaGetLastError();
    return absl::FailedPreconditionError(StrCat(
        "GPU ", device, " (", info.name, ", compute capability ", info.compute_major, ".", info.compute_minor,
        ") cannot run this build's kernels (", cudaGetErrorString(e), "): rebuild with CMAKE_CUDA_ARCHITECTURES set for it"));
  }
  // SWIFTLET_CUDA_TENSOR_CORES=0 takes the dp4a kernels instead: for
  // comparing the two (scripts/gpu-check.sh), not for production.
  // The mma needs sm_80: both the GPU and the code built for it.
  const bool mma_built = cuda_matmul::TensorCoreKernelBuilt();
  auto off = [](const char* name) {
    const char* knob = std::getenv(name);
    return knob != nullptr && std::string(knob) == "0";
  };
  cuda_matmul::MatMulKernels kernels;
  kernels.tensor_cores = mma_built && info.compute_major >= 8 && !off("SWIFTLET_CUDA_TENSOR_CORES");
  // SWIFTLET_CUDA_PROMPT_KERNEL=output-split: prompts on the mma kernel
  // whose warps split the outputs (matmul_kernels.cu), until the first
  // GPU run says which of the two is faster.
  const char* prompt_kernel = std::getenv("SWIFTLET_CUDA_PROMPT_KERNEL");
  kernels.output_split_prompts = prompt_kernel != nullptr && std::string(prompt_kernel) == "output-split";
  // SWIFTLET_CUDA_GRAPHS=0 issues every launch on its own: for comparing
  // (scripts/gpu-check.sh), and a way out should a driver misbehave.
  cuda_graphs::GraphOptions graphs;
  graphs.enabled = !off("SWIFTLET_CUDA_GRAPHS");
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(device, kernels, graphs));
}

}  // namespace swiftlet
