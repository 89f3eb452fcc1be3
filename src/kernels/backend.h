// The compute interface the model is written against. A backend runs ops on
// tensors that live on its device; the CPU backend is the first, a CUDA
// backend implements the same interface later, so model code is written once.
//
// Every op computes each output row from its own input row only, reducing
// along k in a fixed order, so a row's result never depends on which other
// rows share the call (batch invariance, DESIGN.md). Work may be split over
// output rows, never along k.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/host_memory.h"
#include "core/status.h"
#include "core/tensor_type.h"

namespace swiftlet {

class ComputePool;  // core/thread_pool.h

enum class Device { kCpu, kCuda };

// Memory a backend allocated on its device (Backend::Allocate); freed with
// the object, which may outlive the backend that made it. It carries the copies within itself that a paged KV cache
// needs (copy-on-write of a shared block, scrubbing a freed one), so its
// owner needs no backend to do them.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual uint8_t* data() = 0;
  virtual size_t bytes() const = 0;
  // Copies `bytes` from offset `src` to offset `dst` (not overlapping), and
  // zeroes a range; ordered after every op called before them.
  virtual void CopyWithin(size_t dst, size_t src, size_t bytes) = 0;
  virtual void Zero(size_t offset, size_t bytes) = 0;
};

// Host memory, 64-byte aligned, not zeroed (pages are committed as they are
// first written); null when the allocation fails. The CPU backend's
// Allocate, and the memory of caches made without a backend.
std::unique_ptr<DeviceBuffer> AllocateHostBuffer(size_t bytes);

// How a weight's bytes are arranged. kRows: n_out rows of row_bytes each,
// as in the GGUF file. kRows16: repacked at load for a kernel that computes
// 16 output rows per instruction (kernels/packed_weights.h).
enum class WeightLayout { kRows, kRows16 };

// A 2-D weight: n_out rows of n_in elements of `type`, in place (mmapped)
// or repacked once at load.
struct WeightView {
  TensorType type = TensorType::kF32;
  int64_t n_in = 0;
  int64_t n_out = 0;
  const uint8_t* data = nullptr;
  size_t row_bytes = 0;  // Bytes of one row in the file's layout.
  WeightLayout layout = WeightLayout::kRows;
  // kRows16 only: the rows past the last whole group of 16, in the file's
  // layout (null when n_out is a multiple of 16).
  const uint8_t* tail = nullptr;
  Device device = Device::kCpu;
};

// A weight made ready for one backend's kernels at load
// (Backend::PrepareWeight).
class ResidentWeight {
 public:
  virtual ~ResidentWeight() = default;
  // What MatMul and GetRows are given. Where view().data is not the file's
  // bytes, the file's rows before view().tail (all of them when tail is
  // null) are no longer read.
  virtual const WeightView& view() const = 0;
  // Bytes of the copy made (0 when the file's bytes are read in place).
  virtual size_t bytes() const = 0;
};

// Where one layer's keys and values live in a KV cache held in the
// backend's memory. The cache is a pool of blocks of block_rows positions
// each; in block b, this layer's K rows start at
// base + b * block_stride + k_offset and its V rows at ... + v_offset, rows
// of row_bytes holding kv_dim elements of `type` (F32, F16 or Q8_0:
// kv/kv_row.h). A paged cache's blocks hold every layer; a contiguous cache
// is one block per sequence.
struct KvLayer {
  uint8_t* base = nullptr;
  size_t block_stride = 0;
  size_t k_offset = 0;
  size_t v_offset = 0;
  int64_t block_rows = 0;
  size_t row_bytes = 0;
  TensorType type = TensorType::kF32;
};

// One sequence's rows in one layer: position j is row j % block_rows of
// block blocks[j / block_rows]. A view for code that runs where the cache's
// memory is (the CPU backend, tests).
struct KvRows {
  KvLayer layer;
  const int32_t* blocks = nullptr;

  uint8_t* K(int64_t j) const { return Row(j, layer.k_offset); }
  uint8_t* V(int64_t j) const { return Row(j, layer.v_offset); }

 private:
  uint8_t* Row(int64_t j, size_t offset) const {
    return layer.base + static_cast<size_t>(blocks[j / layer.block_rows]) * layer.block_stride +
           offset + static_cast<size_t>(j % layer.block_rows) * layer.row_bytes;
  }
};

// The KV rows of a batch in one layer: batch row t's sequence has its block
// table at tables + table_start[t]. Both arrays are in the backend's memory
// (uploaded once per step: the tables are the same for every layer).
struct KvBatch {
  KvLayer layer;
  const int32_t* tables = nullptr;
  const int32_t* table_start = nullptr;
  // The most consecutive batch rows of one sequence (a prompt chunk's
  // length; 1 in a decode step): a hint that lets a kernel read a key once
  // for all of a chunk's rows. It never changes a result.
  int64_t rows_per_sequence = 1;

  KvRows RowsOf(int64_t t) const { return {layer, tables + table_start[t]}; }
};

struct MatMulJob {
  WeightView w;
  float* y = nullptr;  // n_rows rows of w.n_out
};

struct AttentionShape {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;  // Applied to q·k (1/sqrt(head_dim)).
};

struct RopeShape {
  int64_t n_head = 0;
  int64_t head_dim = 0;
  int64_t rope_dim = 0;    // Leading dimensions of each head that rotate.
  bool neox = false;       // Pairs (i, i + rope_dim/2) instead of (2i, 2i+1).
  float freq_base = 10000.0f;
  float position_scale = 1.0f;  // Linear scaling multiplies positions.
  // Optional per-pair divisors of the rotation frequency (rope_dim/2 of
  // them): Llama 3's long-context scaling. Null: none.
  const float* freq_factors = nullptr;
};

// Pointers an op takes or writes are in the backend's memory (from
// Allocate, or the cache's and weights' memory), except where an op says
// "host".
class Backend {
 public:
  virtual ~Backend() = default;

  // --- Memory ------------------------------------------------------------

  // `bytes` of the backend's memory, 64-byte aligned, or null when the
  // device is out of memory.
  virtual std::unique_ptr<DeviceBuffer> Allocate(size_t bytes) = 0;
  // True when the host reads and writes the backend's memory directly (the
  // CPU): callers may then skip staging copies.
  virtual bool SharesHostMemory() const = 0;
  // Copies `bytes` from host memory to the backend's, and back. Ordered
  // after every op called before them.
  virtual void Upload(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void Download(void* host_dst, const void* src, size_t bytes) = 0;
  // Where host buffers that Download fills should come from
  // (core/host_memory.h): a GPU's copy engine writes page-locked memory at
  // the bus's rate, and pageable memory through the driver's staging at a
  // fraction of it. Null: plain memory (the default, and the CPU's).
  virtual std::shared_ptr<HostMemorySource> HostMemory() { return nullptr; }
  // Starts the ops called so far: a device backend may hold its launches
  // back to issue a run of them at once (a CUDA graph), until a copy or
  // this. They still run in the order called.
  virtual void Flush() {}
  // A backend's work is finished once Download returns or the backend is
  // destroyed; memory it wrote is then ready for another backend's ops
  // (weights are uploaded through one backend, read through another's).

  // `w` (layout kRows: the file's bytes in host memory, mapped) made ready
  // for this backend's kernels, once at load: for MatMul, or for GetRows
  // (an embedding table, kept in rows). The CPU backend repacks matmul
  // weights of the types its ISA has a packed kernel for
  // (kernels/packed_weights.h) and reads the rest in place; a device
  // backend copies to its memory, in its own layout. `threads` share the
  // work. Errors: a type the backend cannot compute with, or no memory for
  // a copy it cannot do without.
  enum class WeightUse { kMatMul, kLookup };
  virtual absl::StatusOr<std::unique_ptr<ResidentWeight>> PrepareWeight(const WeightView& w,
                                                                        WeightUse use,
                                                                        int threads) = 0;

  // --- Ops ---------------------------------------------------------------

  // y[t] = W · x[t] for t < n_rows; x rows of w.n_in floats, y rows of
  // w.n_out. Quantized weights see quantized activations (kernels/vec_dot.h).
  virtual void MatMul(const WeightView& w, const float* x, int64_t n_rows, float* y) = 0;

  // Several matmuls of the same input (Q, K and V; gate and up), each
  // exactly as MatMul would compute it, in one pass: at most 4 jobs, all
  // with the same n_in.
  virtual void MatMuls(std::span<const MatMulJob> jobs, const float* x, int64_t n_rows) = 0;

  // y[t] = x[t] / sqrt(mean(x[t]²) + eps) * weight, rows of n.
  virtual void RmsNorm(const float* x, const float* weight, int64_t n, int64_t n_rows, float eps,
                       float* y) = 0;

  // Rotates each head of x[t] (rows of n_head * head_dim) by positions[t].
  virtual void Rope(float* x, int64_t n_rows, const int32_t* positions, const RopeShape& shape) = 0;

  // Writes row t of k and of v (kv_dim floats each, converted to the
  // cache's type) as position positions[t] of batch row t's sequence. The
  // caller has checked that every such row is the sequence's own to write.
  virtual void StoreKv(const float* k, const float* v, int64_t n_rows, const int32_t* positions,
                       const KvBatch& kv, int64_t kv_dim) = 0;

  // Causal attention of query row t (at positions[t]) over its sequence's
  // rows 0..positions[t]; q and out rows of n_head * head_dim.
  virtual void Attention(const float* q, int64_t n_rows, const int32_t* positions,
                         const KvBatch& kv, const AttentionShape& shape, float* out) = 0;

  // x[i] = silu(gate[i]) * up[i] for n elements.
  virtual void SiluMul(float* gate, const float* up, int64_t n) = 0;

  // Element-wise y[i] += x[i].
  virtual void Add(float* y, const float* x, int64_t n) = 0;

  // Adds `bias` (n floats) to each of n_rows rows of y.
  virtual void AddBias(float* y, const float* bias, int64_t n, int64_t n_rows) = 0;

  // out[i] = x[rows[i]] for i < count, rows of n floats.
  virtual void GatherRows(const float* x, int64_t n, const int32_t* rows, int64_t count,
                          float* out) = 0;

  // Dequantizes rows `ids` of an embedding table into out (rows of n_in).
  virtual void GetRows(const WeightView& table, const int32_t* ids, int64_t n, float* out) = 0;

  // out[t] = the first index of row t's largest value that is not NaN
  // (rows of n > 0 floats), or kNoArgMax when none is above -inf (ArgMaxRow,
  // core/argmax.h). A greedy sequence's next token, without copying its
  // logits off the device.
  virtual void ArgMax(const float* x, int64_t n, int64_t n_rows, int32_t* out) = 0;
};

// The CPU backend: dot products dispatched to the best ISA variant CPUID
// allows (each bit-identical to the scalar specification), matmuls split over
// output rows on a persistent pool of `threads` threads (the caller
// included). One backend per engine thread: it keeps per-call scratch.
std::unique_ptr<Backend> MakeCpuBackend(int threads);
// The same on a pool owned elsewhere (several engines sharing the cores,
// one forward pass at a time: engine/step_gate.h); it must outlive the
// backend.
std::unique_ptr<Backend> MakeCpuBackend(ComputePool& shared_pool);

}  // namespace swiftlet
