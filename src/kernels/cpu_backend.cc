// The CPU backend: plain loops around the dot products of kernels/vec_dot.h,
// which dispatch to the ISA variant CPUID allows (all bit-identical to the
// scalar specification). Matmuls run on a persistent ComputePool, split over
// output rows only.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/activation_quantize.h"
#include "kernels/attention_ops.h"
#include "kernels/backend.h"
#include "kernels/dequantize.h"
#include "kernels/float16.h"
#include "kernels/kv_row_encode.h"
#include "kernels/packed_weights.h"
#include "kernels/quantize.h"
#include "kernels/argmax_row.h"
#include "kernels/silu.h"
#include "kernels/vec_dot.h"

namespace swiftlet {
namespace {

// Below this many multiply-adds a matmul runs on the calling thread alone:
// waking the pool costs a few microseconds.
constexpr int64_t kParallelWork = int64_t{1} << 16;
// The same for element-wise and per-row passes (operations, not
// multiply-adds): a row of 2048 floats takes ~2 us, a wake-up a few.
constexpr int64_t kParallelRowWork = int64_t{1} << 13;
// Output rows per task: whole 16-row groups, so no two tasks write the
// same cache line of y. One row (decode) takes 64 (the kernel's 4-group
// passes; 64, 96, 192, 256 and 1024 measured alike); a batch takes 48 to
// 192 (the batched Q8_0 kernel's 3-group tiles; 192 gave +2% over 96 at 16 rows),
// fewer where a matrix would give less than four tasks per thread: 576
// rows in 192-row tasks left one of two threads idle a third of the time
// (SmolLM2 batched -25%).
constexpr int64_t kDecodeRowsPerTask = 64;
constexpr int64_t kMinBatchRowsPerTask = 48;
constexpr int64_t kMaxBatchRowsPerTask = 192;
constexpr int64_t kTasksPerThread = 4;

// The file's rows, read where they are mapped.
class InPlaceWeight final : public ResidentWeight {
 public:
  explicit InPlaceWeight(const WeightView& w) : view_(w) {}
  const WeightView& view() const override { return view_; }
  size_t bytes() const override { return 0; }

 private:
  WeightView view_;
};

class RepackedWeight final : public ResidentWeight {
 public:
  explicit RepackedWeight(std::unique_ptr<PackedWeight> packed) : packed_(std::move(packed)) {}
  const WeightView& view() const override { return packed_->view(); }
  size_t bytes() const override { return packed_->bytes(); }

 private:
  std::unique_ptr<PackedWeight> packed_;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads)
      : owned_pool_(std::make_unique<ComputePool>(std::max(1, threads))), pool_(*owned_pool_) {}
  explicit CpuBackend(ComputePool& shared) : pool_(shared) {}

  std::unique_ptr<DeviceBuffer> Allocate(size_t bytes) override { return AllocateHostBuffer(bytes); }
  bool SharesHostMemory() const override { return true; }

  absl::StatusOr<std::unique_ptr<ResidentWeight>> PrepareWeight(const WeightView& w, WeightUse use,
                                                                int threads) override {
    // A table, a type without a packed kernel, or a copy without memory:
    // the file's layout serves, read in place by GetRows and the row
    // kernels.
    if (use == WeightUse::kLookup) return std::make_unique<InPlaceWeight>(w);
    std::unique_ptr<PackedWeight> packed = PackWeight(w, ChosenKernelIsa(), threads);
    if (packed == nullptr) return std::make_unique<InPlaceWeight>(w);
    return std::make_unique<RepackedWeight>(std::move(packed));
  }
  // Callers skip a copy onto itself (SharesHostMemory), so these copy only
  // between distinct buffers.
  void Upload(void* dst, const void* host_src, size_t bytes) override {
    if (dst != host_src) std::memcpy(dst, host_src, bytes);
  }
  void Download(void* host_dst, const void* src, size_t bytes) override {
    if (host_dst != src) std::memcpy(host_dst, src, bytes);
  }

  void MatMul(const WeightView& w, const float* x, int64_t n_rows, float* y) override {
    const MatMulJob job{w, y};
    MatMuls(std::span<const MatMulJob>(&job, 1), x, n_rows);
  }

  // Every job's activations are quantized once per activation format, and
  // all jobs' row ranges go to the pool as one task list, so Q, K and V (or
  // gate and up) cost one wake-up and one pass over x.
  void MatMuls(std::span<const MatMulJob> jobs, const float* x, int64_t n_rows) override {
    SWIFTLET_CHECK(!jobs.empty() && jobs.size() <= kMaxJobs);
    const int64_t n_in = jobs[0].w.n_in;
    int64_t work = 0;
    int64_t tasks[kMaxJobs + 1] = {0};
    int64_t rows_per_task[kMaxJobs] = {0};
    const PreparedActs* acts[kMaxJobs];
    used_acts_ = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
      const WeightView& w = jobs[j].w;
      SWIFTLET_CHECK(CanMatMul(w.type) && w.n_in == n_in);
      acts[j] = &Prepare(w, x, n_rows);
      work += w.n_in * w.n_out * n_rows;
      rows_per_task[j] = RowsPerTask(w.n_out, n_rows);
      tasks[j + 1] = tasks[j] + TaskCount(w, rows_per_task[j]);
    }
    auto run = [&](int64_t task) {
      size_t j = 0;
      while (task >= tasks[j + 1]) ++j;
      RunTask(jobs[j], *acts[j], n_rows, rows_per_task[j], task - tasks[j]);
    };
    const int64_t total = tasks[jobs.size()];
    if (work < kParallelWork) {
      for (int64_t t = 0; t < total; ++t) run(t);
      return;
    }
    pool_.Run(total, run);
  }

  void RmsNorm(const float* x, const float* weight, int64_t n, int64_t n_rows, float eps,
               float* y) override {
    ForEachRow(n_rows, n, [&](int64_t t) {
      const float* xr = x + t * n;
      float* yr = y + t * n;
      float sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += xr[i] * xr[i];
      const float scale = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
      for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * scale * weight[i];
    });
  }

  void Rope(float* x, int64_t n_rows, const int32_t* positions, const RopeShape& s) override {
    const int64_t half = s.rope_dim / 2;
    const RopeAngles& angles = AnglesFor(positions, n_rows, s);
    ForEachRow(n_rows, s.n_head * s.rope_dim, [&](int64_t t) {
      const float* cos = angles.cos.data() + t * half;
      const float* sin = angles.sin.data() + t * half;
      for (int64_t h = 0; h < s.n_head; ++h) {
        float* head = x + (t * s.n_head + h) * s.head_dim;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t a = s.neox ? i : 2 * i;
          const int64_t b = s.neox ? i + half : 2 * i + 1;
          const float xa = head[a], xb = head[b];
          head[a] = xa * cos[i] - xb * sin[i];
          head[b] = xa * sin[i] + xb * cos[i];
        }
      }
    });
  }

  // Flash-style: each (query row, head) streams its keys in blocks of
  // kKeyBlock with an online softmax (running max, rescaled sum and
  // output), so no score matrix is ever held. Tasks are (query row, KV
  // head) pairs, each running every query head of its group over the same
  // keys while they are in cache. A pair's arithmetic depends only on its
  // own query and keys, and the blocks always start at key 0, so results
  // do not depend on the batch, the chunking or the thread count.
  void StoreKv(const float* k, const float* v, int64_t n_rows, const int32_t* positions,
               const KvBatch& kv, int64_t kv_dim) override {
    for (int64_t t = 0; t < n_rows; ++t) {
      const KvRows rows = kv.RowsOf(t);
      EncodeKvRow(kv.layer.type, k + t * kv_dim, kv_dim, rows.K(positions[t]));
      EncodeKvRow(kv.layer.type, v + t * kv_dim, kv_dim, rows.V(positions[t]));
    }
  }

  void Attention(const float* q, int64_t n_rows, const int32_t* positions, const KvBatch& kv,
                 const AttentionShape& s, float* out) override {
    const AttentionOps& ops = AttentionOpsFor(ChosenKernelIsa(), s.head_dim);
    const int64_t group = s.n_head / s.n_head_kv;
    auto task = [&](int64_t i) {
      const int64_t t = i / s.n_head_kv, kvh = i % s.n_head_kv;
      AttendGroup(ops, q + (t * s.n_head + kvh * group) * s.head_dim, positions[t] + 1, kv.RowsOf(t), kvh,
                  group, s, out + (t * s.n_head + kvh * group) * s.head_dim);
    };
    int64_t work = 0;
    for (int64_t t = 0; t < n_rows; ++t) work += (positions[t] + 1) * s.n_head * s.head_dim;
    if (work < kParallelWork) {
      for (int64_t i = 0; i < n_rows * s.n_head_kv; ++i) task(i);
      return;
    }
    pool_.Run(n_rows * s.n_head_kv, task);
  }

  void SiluMul(float* gate, const float* up, int64_t n) override {
    ForEachSlice(n, [&](int64_t begin, int64_t end) { silu_mul_(gate + begin, up + begin, end - begin); });
  }

  void Add(float* y, const float* x, int64_t n) override {
    ForEachSlice(n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) y[i] += x[i];
    });
  }

  void AddBias(float* y, const float* bias, int64_t n, int64_t n_rows) override {
    ForEachRow(n_rows, n, [&](int64_t t) {
      float* row = y + t * n;
      for (int64_t i = 0; i < n; ++i) row[i] += bias[i];
    });
  }

  void GatherRows(const float* x, int64_t n, const int32_t* rows, int64_t count, float* out) override {
    for (int64_t i = 0; i < count; ++i) std::copy_n(x + rows[i] * n, n, out + i * n);
  }

  void ArgMax(const float* x, int64_t n, int64_t n_rows, int32_t* out) override {
    SWIFTLET_CHECK(n > 0);
    ForEachRow(n_rows, n, [&](int64_t t) { out[t] = argmax_row_(x + t * n, n); });
  }

  void GetRows(const WeightView& table, const int32_t* ids, int64_t n, float* out) override {
    for (int64_t t = 0; t < n; ++t) {
      SWIFTLET_CHECK(ids[t] >= 0 && ids[t] < table.n_out);
      DequantizeRow(table.type, table.data + static_cast<size_t>(ids[t]) * table.row_bytes,
                    out + t * table.n_in, table.n_in);
    }
  }

 private:
  static constexpr int64_t kKeyBlock = 32;

  // Query heads q[0..group) (consecutive rows of head_dim) against keys
  // 0..n_ctx-1 of KV head kvh; writes their outputs to out likewise. Each
  // key and value row is read once for the whole group (the group ops);
  // per head the order of every operation is that of one head alone: its
  // scores block by block, its running max, rescale, then its softmax
  // weights and their sum (ops.softmax_weights), and accumulation in key
  // order.
  static void AttendGroup(const AttentionOps& ops, const float* q, int64_t n_ctx, const KvRows& kv,
                          int64_t kvh, int64_t group, const AttentionShape& s, float* out) {
    const int64_t dim = s.head_dim;
    // Per-thread scratch, grown once: no allocation per token afterwards.
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<size_t>(group * (dim + 2 + 3 * kKeyBlock)));
    float* acc = scratch.data();
    float* max = acc + group * dim;
    float* sum = max + group;
    float* p = sum + group;                     // [value row][head h], the block's weighing keys
    float* score = p + group * kKeyBlock;       // [key j][head h], kKeyBlock keys
    float* weight = score + group * kKeyBlock;  // [head h][key j]
    const uint8_t* v_rows[kKeyBlock];           // The value rows p weighs.
    std::fill(acc, acc + group * dim, 0.0f);
    std::fill(max, max + group, -INFINITY);
    std::fill(sum, sum + group, 0.0f);
    const TensorType type = kv.layer.type;
    // Q8_0 heads are whole blocks (the model checks head_dim % 32 == 0).
    SWIFTLET_CHECK(type != TensorType::kQ8_0 || dim % BlockQ8_0::kElems == 0);
    // A head's slice of a cache row, in bytes, and where head kvh's starts.
    const size_t head_bytes =
        type == TensorType::kQ8_0 ? static_cast<size_t>(dim / BlockQ8_0::kElems) * sizeof(BlockQ8_0)
                                  : static_cast<size_t>(dim) * (type == TensorType::kF16 ? 2 : 4);
    const size_t head_offset = static_cast<size_t>(kvh) * head_bytes;
    auto dots = [&](const uint8_t* k, float* out_scores) {
      switch (type) {
        case TensorType::kF16:
          return ops.dot_group_f16(q, group, reinterpret_cast<const uint16_t*>(k), dim, out_scores);
        case TensorType::kQ8_0:
          return ops.dot_group_q8_0(q, group, reinterpret_cast<const BlockQ8_0*>(k), dim, out_scores);
        default: return ops.dot_group_f32(q, group, reinterpret_cast<const float*>(k), dim, out_scores);
      }
    };
    // The rows are a cache's bytes; the op takes pointers of its element
    // type, each converted here (an array of byte pointers is not one of
    // element pointers).
    auto axpys = [&](int64_t rows) {
      auto typed = [&](auto* out) {
        using Pointer = std::remove_reference_t<decltype(*out)>;
        for (int64_t j = 0; j < rows; ++j) out[j] = reinterpret_cast<Pointer>(v_rows[j]);
        return out;
      };
      switch (type) {
        case TensorType::kF16: {
          const uint16_t* rows_f16[kKeyBlock];
          return ops.axpy_rows_f16(acc, group, p, typed(rows_f16), rows, dim);
        }
        case TensorType::kQ8_0: {
          const BlockQ8_0* rows_q8[kKeyBlock];
          return ops.axpy_rows_q8_0(acc, group, p, typed(rows_q8), rows, dim);
        }
        default: {
          const float* rows_f32[kKeyBlock];
          return ops.axpy_rows_f32(acc, group, p, typed(rows_f32), rows, dim);
        }
      }
    };
    auto prefetch = [&](const uint8_t* row) {
      for (size_t line = 0; line < head_bytes; line += 64) {
        __builtin_prefetch(row + head_offset + line);
      }
    };
    for (int64_t j0 = 0; j0 < n_ctx; j0 += kKeyBlock) {
      const int64_t n = std::min(kKeyBlock, n_ctx - j0);
      // The rows of a long context come from beyond L2, and a group's dot
      // products are long enough that out-of-order execution alone keeps
      // too few loads in flight: this block's values and the next block's
      // keys are requested while the keys are scored.
      for (int64_t j = 0; j < n; ++j) {
        prefetch(kv.V(j0 + j));
        if (j0 + kKeyBlock + j < n_ctx) prefetch(kv.K(j0 + kKeyBlock + j));
        dots(kv.K(j0 + j) + head_offset, score + j * group);
      }
      for (int64_t h = 0; h < group; ++h) {
        float* weight_h = weight + h * kKeyBlock;
        float block_max = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
          weight_h[j] = score[j * group + h] * s.scale;
          block_max = std::max(block_max, weight_h[j]);
        }
        if (block_max > max[h]) {
          // Rescale what came before to the new maximum (a weight of 0 the
          // first time, from -inf).
          const float correction = SoftmaxWeight(max[h] - block_max);
          sum[h] *= correction;
          float* acc_h = acc + h * dim;
          for (int64_t i = 0; i < dim; ++i) acc_h[i] *= correction;
          max[h] = block_max;
        }
        // A whole block's exponentials at once, in SIMD lanes.
        sum[h] += ops.softmax_weights(weight_h, n, max[h]);
      }
      // The block's value rows in key order, each with its heads' weights.
      // A key more than 87 below every head's maximum adds nothing (acc +
      // 0 * v is acc for finite v), so its value row is not read.
      int64_t rows = 0;
      for (int64_t j = 0; j < n; ++j) {
        bool weighs = false;
        float* pj = p + rows * group;
        for (int64_t h = 0; h < group; ++h) {
          pj[h] = weight[h * kKeyBlock + j];
          weighs |= pj[h] != 0.0f;
        }
        if (weighs) v_rows[rows++] = kv.V(j0 + j) + head_offset;
      }
      if (rows > 0) axpys(rows);
    }
    for (int64_t h = 0; h < group; ++h) {
      for (int64_t i = 0; i < dim; ++i) out[h * dim + i] = acc[h * dim + i] / sum[h];
    }
  }

  static constexpr size_t kMaxJobs = 4;

  // RoPE's angles depend only on the positions and the frequency settings,
  // which every layer of a forward pass (and its Q and K) share: they are
  // computed once per distinct set and reused, instead of a pow, a cos and
  // a sin per element per layer. The values are the same either way.
  struct RopeAngles {
    std::vector<int32_t> positions;
    int64_t rope_dim = -1;
    float freq_base = 0, position_scale = 0;
    const float* freq_factors = nullptr;
    std::vector<float> cos, sin;  // positions.size() rows of rope_dim / 2
  };

  const RopeAngles& AnglesFor(const int32_t* positions, int64_t n_rows, const RopeShape& s) {
    RopeAngles& a = rope_angles_;
    if (a.rope_dim == s.rope_dim && a.freq_base == s.freq_base && a.position_scale == s.position_scale &&
        a.freq_factors == s.freq_factors && std::equal(positions, positions + n_rows, a.positions.begin(),
                                                        a.positions.end())) {
      return a;
    }
    const int64_t half = s.rope_dim / 2;
    a.positions.assign(positions, positions + n_rows);
    a.rope_dim = s.rope_dim;
    a.freq_base = s.freq_base;
    a.position_scale = s.position_scale;
    a.freq_factors = s.freq_factors;
    a.cos.resize(static_cast<size_t>(n_rows * half));
    a.sin.resize(static_cast<size_t>(n_rows * half));
    for (int64_t t = 0; t < n_rows; ++t) {
      const double pos = static_cast<double>(positions[t]) * s.position_scale;
      for (int64_t i = 0; i < half; ++i) {
        double theta =
            pos * std::pow(static_cast<double>(s.freq_base), -2.0 * static_cast<double>(i) /
                                                                 static_cast<double>(s.rope_dim));
        if (s.freq_factors != nullptr) theta /= s.freq_factors[i];
        a.cos[t * half + i] = static_cast<float>(std::cos(theta));
        a.sin[t * half + i] = static_cast<float>(std::sin(theta));
      }
    }
    return a;
  }

  // Activation rows quantized for one weight format, with the block scales
  // and sums the packed kernels want.
  struct PreparedActs {
    TensorType type = TensorType::kF32;
    int64_t sum_elems = 0;  // 0: no packed sums
    size_t row_bytes = 0;
    std::vector<uint8_t> rows;
    std::vector<float> scales;
    std::vector<int32_t> sums;
    PackedActivations packed;
  };

  // The prepared activations for `w`, made at most once per format in one
  // MatMuls call (the slots are reused across calls: no allocation once
  // they have grown).
  const PreparedActs& Prepare(const WeightView& w, const float* x, int64_t n_rows) {
    const TensorType type = ActivationTypeFor(w.type);
    const int64_t sum_elems = w.layout == WeightLayout::kRows16 ? PackedSumElems(w.type) : 0;
    for (size_t i = 0; i < used_acts_; ++i) {
      if (acts_[i].type == type && acts_[i].sum_elems == sum_elems) return acts_[i];
    }
    SWIFTLET_CHECK(used_acts_ < kMaxJobs);
    PreparedActs& a = acts_[used_acts_++];
    a.type = type;
    a.sum_elems = sum_elems;
    uint64_t row_bytes = 0;
    SWIFTLET_CHECK(RowBytes(type, static_cast<uint64_t>(w.n_in), &row_bytes));
    a.row_bytes = row_bytes;
    a.rows.resize(row_bytes * static_cast<size_t>(n_rows));
    ForEachRow(n_rows, w.n_in, [&](int64_t t) {
      QuantizeActivationRow(type, x + t * w.n_in, a.rows.data() + t * row_bytes, w.n_in);
    });
    // Float activations (F32/F16/BF16 weights) need nothing more.
    a.packed = {a.rows.data(), a.row_bytes, nullptr, nullptr, n_rows, w.n_in / BlockElems(type), 0};
    if (sum_elems > 0) {
      const int64_t nb = w.n_in / BlockElems(type);
      const int sums_per_block = static_cast<int>(BlockElems(type) / sum_elems);
      a.scales.resize(static_cast<size_t>(n_rows * nb));
      a.sums.resize(static_cast<size_t>(n_rows * nb * sums_per_block));
      PrepareActivationSums(type, a.rows.data(), n_rows, w.n_in, sum_elems, a.scales.data(),
                            a.sums.data());
      a.packed = {a.rows.data(), a.row_bytes, a.scales.data(), a.sums.data(), n_rows, nb,
                  sums_per_block};
    }
    return a;
  }

  int64_t RowsPerTask(int64_t n_out, int64_t n_rows) const {
    if (n_rows == 1) return kDecodeRowsPerTask;
    int64_t rows = kMinBatchRowsPerTask;
    while (rows < kMaxBatchRowsPerTask && n_out >= 2 * rows * kTasksPerThread * pool_.threads()) rows *= 2;
    return rows;
  }

  // Tasks of `rows_per_task` output rows (whole 16-row groups for packed
  // weights, plus one task for a packed weight's tail rows).
  static int64_t TaskCount(const WeightView& w, int64_t rows_per_task) {
    if (w.layout != WeightLayout::kRows16) return (w.n_out + rows_per_task - 1) / rows_per_task;
    return GroupTasks(w, rows_per_task) + (w.tail != nullptr ? 1 : 0);
  }
  static int64_t GroupTasks(const WeightView& w, int64_t rows_per_task) {
    const int64_t per_task = rows_per_task / kPackRows;
    return (w.n_out / kPackRows + per_task - 1) / per_task;
  }

  static void RunTask(const MatMulJob& job, const PreparedActs& act, int64_t n_rows,
                      int64_t rows_per_task, int64_t task) {
    const WeightView& w = job.w;
    float* y = job.y;
    // Row kernel over output rows [begin, end); `base` holds row first_row.
    auto rows = [&](const uint8_t* base, int64_t begin, int64_t end, int64_t first_row) {
      for (int64_t o = begin; o < end; ++o) {
        const uint8_t* wrow = base + static_cast<size_t>(o - first_row) * w.row_bytes;
        for (int64_t t = 0; t < n_rows; ++t) {
          y[t * w.n_out + o] = VecDot(w.type, wrow, act.rows.data() + t * act.row_bytes, w.n_in);
        }
      }
    };
    if (w.layout != WeightLayout::kRows16) {
      rows(w.data, task * rows_per_task, std::min(w.n_out, (task + 1) * rows_per_task), 0);
      return;
    }
    const int64_t groups = w.n_out / kPackRows;
    if (task == GroupTasks(w, rows_per_task)) {
      rows(w.tail, groups * kPackRows, w.n_out, groups * kPackRows);
      return;
    }
    const int64_t per_task = rows_per_task / kPackRows;
    PackedMatMul(w, act.packed, task * per_task, std::min(groups, (task + 1) * per_task),
                 y, w.n_out);
  }

  // fn(t) for each of n_rows independent rows of about row_work operations:
  // on the pool once a batch makes that worth a wake-up (a prompt or a
  // batch spent ~8% of its wall time in these serial row loops while the
  // other threads spun). Every row's arithmetic is the same wherever it runs.
  void ForEachRow(int64_t n_rows, int64_t row_work, absl::FunctionRef<void(int64_t)> fn) {
    if (n_rows < 2 || n_rows * row_work < kParallelRowWork) {
      for (int64_t t = 0; t < n_rows; ++t) fn(t);
      return;
    }
    pool_.Run(n_rows, fn);
  }

  // fn(begin, end) over [0, n) in slices of kSliceElems: element-wise
  // passes, so splitting them changes no result; on the pool once a batch
  // has a few rows.
  static constexpr int64_t kSliceElems = 4096;  // A multiple of 16 floats: slices share no cache line.
  void ForEachSlice(int64_t n, absl::FunctionRef<void(int64_t, int64_t)> fn) {
    if (n < 2 * kSliceElems) return fn(0, n);  // One decode row: not worth a wake-up.
    ForEachRow((n + kSliceElems - 1) / kSliceElems, kSliceElems, [&](int64_t slice) {
      fn(slice * kSliceElems, std::min(n, (slice + 1) * kSliceElems));
    });
  }

  std::unique_ptr<ComputePool> owned_pool_;  // Null when the pool is shared.
  ComputePool& pool_;
  const SiluMulFn silu_mul_ = SiluMulFor(ChosenKernelIsa());
  const ArgMaxRowFn argmax_row_ = ArgMaxRowFor(ChosenKernelIsa());
  RopeAngles rope_angles_;
  PreparedActs acts_[kMaxJobs];
  size_t used_acts_ = 0;
};

}  // namespace

namespace {

class HostBuffer final : public DeviceBuffer {
 public:
  HostBuffer(uint8_t* data, size_t bytes) : data_(data), bytes_(bytes) {}
  ~HostBuffer() override { ::operator delete[](data_, std::align_val_t{64}); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  uint8_t* data() override { return data_; }
  size_t bytes() const override { return bytes_; }
  void CopyWithin(size_t dst, size_t src, size_t bytes) override {
    SWIFTLET_CHECK(dst + bytes <= bytes_ && src + bytes <= bytes_);
    std::memcpy(data_ + dst, data_ + src, bytes);
  }
  void Zero(size_t offset, size_t bytes) override {
    SWIFTLET_CHECK(offset + bytes <= bytes_);
    std::memset(data_ + offset, 0, bytes);
  }

 private:
  uint8_t* data_;
  size_t bytes_;
};

}  // namespace

std::unique_ptr<DeviceBuffer> AllocateHostBuffer(size_t bytes) {
  // At least one byte, so an empty array still has an address.
  const size_t size = std::max<size_t>(bytes, 1);
  auto* data = static_cast<uint8_t*>(::operator new[](size, std::align_val_t{64}, std::nothrow));
  if (data == nullptr) return nullptr;
  return std::make_unique<HostBuffer>(data, bytes);
}

std::unique_ptr<Backend> MakeCpuBackend(int threads) {
  return std::make_unique<CpuBackend>(threads);
}

std::unique_ptr<Backend> MakeCpuBackend(ComputePool& shared_pool) {
  return std::make_unique<CpuBackend>(shared_pool);
}

}  // namespace swiftlet
