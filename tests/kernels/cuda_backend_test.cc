// The CUDA backend's ops against the math written here (matmuls) and the CPU
// backend (the rest), on the first GPU. Without a GPU, or in a build without
// CUDA, the test says so in one skip line; with SWIFTLET_REQUIRE_GPU=1 (the
// GPU check script) that is a failure instead.
//
// Tolerances: matmuls are checked against double-precision math on the
// dequantized weights and on the activations as the backend sees them (F32
// for float weights; for quantized weights quantized as QuantizeRowQ8_0
// quantizes them, which the GPU must do to the bit), relative 1e-5 of the
// sum of |terms|; element-wise ops and attention against the CPU backend
// (1e-5 absolute on values of order 1; RoPE's angles are double on both).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/dequantize.h"
#include "kernels/gaussian.h"
#include "kernels/quantize.h"

namespace swiftlet {
namespace {

// Host arrays copied to and from the GPU.
class Gpu {
 public:
  explicit Gpu(Backend& be) : be_(be) {}
  template <typename T>
  T* Put(const std::vector<T>& host) {
    buffers_.push_back(be_.Allocate(host.size() * sizeof(T)));
    EXPECT_NE(buffers_.back(), nullptr);
    be_.Upload(buffers_.back()->data(), host.data(), host.size() * sizeof(T));
    return reinterpret_cast<T*>(buffers_.back()->data());
  }
  template <typename T>
  std::vector<T> Get(const T* device, size_t n) {
    std::vector<T> host(n);
    be_.Download(host.data(), device, n * sizeof(T));
    return host;
  }

 private:
  Backend& be_;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
};

// x as the backend's quantized matmuls see it: blocks of 32 quantized by
// QuantizeRowQ8_0, then what each quant stands for.
std::vector<float> AsQuantizedActivations(const std::vector<float>& x) {
  std::vector<BlockQ8_0> blocks(x.size() / BlockQ8_0::kElems);
  QuantizeRowQ8_0(x.data(), blocks.data(), static_cast<int64_t>(x.size()));
  std::vector<float> out(x.size());
  DequantizeRow(TensorType::kQ8_0, blocks.data(), out.data(), static_cast<int64_t>(out.size()));
  return out;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, float tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << what << " element " << i;
}

// Whether there is no GPU to test on (`why`); with SWIFTLET_REQUIRE_GPU=1
// that is a failure.
bool NoGpu(std::string* why) {
  if (!ListCudaDevices(why).empty()) return false;
  if (const char* r = std::getenv("SWIFTLET_REQUIRE_GPU"); r != nullptr && std::string(r) == "1") {
    ADD_FAILURE() << "SWIFTLET_REQUIRE_GPU=1 but no GPU (" << *why << ")";
  }
  return true;
}

// A CUDA backend on the first GPU (the test skips without one), the CPU
// backend to compare with, and host arrays on the GPU.
class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (NoGpu(&why)) GTEST_SKIP() << "no GPU to test the CUDA backend on (" << why << ")";
    absl::StatusOr<std::unique_ptr<Backend>> made = MakeCudaBackend(0);
    ASSERT_TRUE(made.ok()) << made.status();
    gpu_ = std::move(*made);
    mem_ = std::make_unique<Gpu>(*gpu_);
  }

  std::unique_ptr<Backend> gpu_;
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend(2);
  std::unique_ptr<Gpu> mem_;  // Its buffers go before the backends.
};

TEST_F(CudaBackendTest, DownloadsFillTheBackendsHostMemoryWhichOutlivesTheBackend) {
  // The forward's outputs live in the backend's host memory (page-locked):
  // a Qwen-sized step's logits (32 rows of 151,936) come back whole, into a
  // vector that is freed only after the backend is gone.
  const std::shared_ptr<HostMemorySource> source = gpu_->HostMemory();
  ASSERT_NE(source, nullptr);
  std::vector<float> want(32 * 151936);
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(i % 1000003) * 0.5f;
  const float* device = mem_->Put(want);
  HostVector<float> got{HostAllocator<float>(source)};
  got.resize(want.size());
  gpu_->Download(got.data(), device, want.size() * sizeof(float));
  ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin()));
  // Page-locked: a machine whose limits allow 39 MB locked (any GPU host
  // does) never takes the plain-memory fallback.
  EXPECT_TRUE(IsPageLocked(got.data()));
  mem_.reset();
  gpu_.reset();
  got.resize(got.size() * 2);  // A new block from the source, the old one freed.
  got.clear();
}

TEST_F(CudaBackendTest, EveryOpMatchesTheMathAndTheCpuBackend) {
  Backend& gpu = *gpu_;
  Backend* cpu = cpu_.get();
  Gpu& mem = *mem_;
  EXPECT_FALSE(gpu.SharesHostMemory());

  // Matmuls of every supported type, and GetRows of the same tables; 150
  // rows: 18 whole tiles of 8 and a partial one (for the tensor cores,
  // more than 32: blocks of 64 weight rows by 32 batch rows, or with
  // SWIFTLET_CUDA_PROMPT_KERNEL=output-split 64 by 128: two of them down
  // the batch, the second part empty, and three across the 136 weight
  // rows, the last part past the end). Rows of 1,280 elements
  // take the sliced kernels (weight_slices.h) in whole passes of the warp;
  // 544 elements (17 blocks of 32) and F32's 516 (129 slices) leave the
  // last pass part empty; F16 and BF16 rows of 516, not a whole number of
  // 16-byte slices, take the element-wise kernels.
  const int64_t n_out = 136, rows = 150;
  struct Case {
    TensorType type;
    int64_t n_in;
  };
  std::vector<Case> cases;
  for (TensorType t : {TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0, TensorType::kQ4_0,
                       TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K}) {
    cases.push_back({t, 1280});
  }
  for (TensorType t : {TensorType::kF32, TensorType::kF16, TensorType::kBF16}) cases.push_back({t, 516});
  for (TensorType t : {TensorType::kQ8_0, TensorType::kQ4_0}) cases.push_back({t, 544});
  for (const auto& [t, n_in] : cases) {
    SCOPED_TRACE(std::string(NameOf(t)) + " n_in " + std::to_string(n_in));
    const std::vector<float> x = Gaussian(n_in * rows, 1);
    const std::vector<float> wf = Gaussian(n_in * n_out, 2);
    float* dx = mem.Put(x);
    const bool quantized = t != TensorType::kF32 && t != TensorType::kF16 && t != TensorType::kBF16;
    const std::vector<float> xs = quantized ? AsQuantizedActivations(x) : x;
    uint64_t row_bytes = 0;
    ASSERT_TRUE(RowBytes(t, n_in, &row_bytes));
    std::vector<uint8_t> w(row_bytes * n_out);
    for (int64_t o = 0; o < n_out; ++o) QuantizeRow(t, &wf[o * n_in], &w[o * row_bytes], n_in);
    const WeightView file{t, n_in, n_out, w.data(), row_bytes};
    auto resident = gpu.PrepareWeight(file, Backend::WeightUse::kMatMul, 1);
    ASSERT_TRUE(resident.ok()) << resident.status();
    std::vector<float> y(rows * n_out);
    float* dy = mem.Put(y);
    gpu.MatMul((*resident)->view(), dx, rows, dy);
    y = mem.Get(dy, y.size());
    std::vector<float> wr(n_in);
    for (int64_t o = 0; o < n_out; ++o) {
      DequantizeRow(t, &w[o * row_bytes], wr.data(), n_in);
      for (int64_t r = 0; r < rows; ++r) {
        double want = 0, mag = 0;
        for (int64_t i = 0; i < n_in; ++i) {
          want += double(wr[i]) * xs[r * n_in + i];
          mag += std::fabs(double(wr[i]) * xs[r * n_in + i]);
        }
        ASSERT_NEAR(y[r * n_out + o], want, 1e-5 * mag) << r << "," << o;
      }
    }
    // Batch invariance at the op: 45 rows from row 100 (a prompt's blocks,
    // one down the batch), the first 19 rows (at most 32: the tensor
    // cores' blocks of 16 weight rows) and row 13 alone (at most 8) give the
    // bits they had among 150.
    for (const auto& [first, count] : std::vector<std::pair<int64_t, int64_t>>{{100, 45}, {0, 19}, {13, 1}}) {
      std::vector<float> part(count * n_out);
      float* dpart = mem.Put(part);
      gpu.MatMul((*resident)->view(), dx + first * n_in, count, dpart);
      part = mem.Get(dpart, part.size());
      for (int64_t i = 0; i < count * n_out; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(part[i]), std::bit_cast<uint32_t>(y[first * n_out + i]))
            << count << " rows from " << first << ", element " << i;
      }
    }
    const std::vector<int32_t> ids = {5, 0, 39, 5};
    std::vector<float> got(ids.size() * n_in), want(got.size());
    float* dgot = mem.Put(got);
    gpu.GetRows((*resident)->view(), mem.Put(ids), static_cast<int64_t>(ids.size()), dgot);
    cpu->GetRows(file, ids.data(), static_cast<int64_t>(ids.size()), want.data());
    ExpectNear(mem.Get(dgot, got.size()), want, 0, "GetRows");
  }
  // MatMuls of weights of several types on one x (as Q4_K_M's Q, K and V:
  // Q4_K, Q4_K, Q6_K; with an F16 among them): each job's result the bits
  // MatMul gives it alone.
  {
    const int64_t n_in = 768;
    const std::vector<float> x = Gaussian(n_in * rows, 6);
    float* dx = mem.Put(x);
    std::vector<std::vector<uint8_t>> files;
    std::vector<std::unique_ptr<ResidentWeight>> residents;
    std::vector<MatMulJob> jobs;
    std::vector<float*> alone;
    for (TensorType t : {TensorType::kQ4_K, TensorType::kF16, TensorType::kQ6_K}) {
      uint64_t row_bytes = 0;
      ASSERT_TRUE(RowBytes(t, n_in, &row_bytes));
      const std::vector<float> wf = Gaussian(n_in * n_out, 7 + static_cast<uint32_t>(jobs.size()));
      files.emplace_back(row_bytes * n_out);
      for (int64_t o = 0; o < n_out; ++o) QuantizeRow(t, &wf[o * n_in], &files.back()[o * row_bytes], n_in);
      auto resident = gpu.PrepareWeight({t, n_in, n_out, files.back().data(), row_bytes},
                                        Backend::WeightUse::kMatMul, 1);
      ASSERT_TRUE(resident.ok()) << resident.status();
      residents.push_back(std::move(*resident));
      jobs.push_back({residents.back()->view(), mem.Put(std::vector<float>(rows * n_out))});
      alone.push_back(mem.Put(std::vector<float>(rows * n_out)));
      gpu.MatMul(residents.back()->view(), dx, rows, alone.back());
    }
    gpu.MatMuls(jobs, dx, rows);
    for (size_t j = 0; j < jobs.size(); ++j) {
      const std::vector<float> together = mem.Get(jobs[j].y, rows * n_out);
      const std::vector<float> single = mem.Get(alone[j], rows * n_out);
      for (size_t i = 0; i < together.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(together[i]), std::bit_cast<uint32_t>(single[i])) << "job " << j << " " << i;
      }
    }
  }

  const auto unsupported = gpu.PrepareWeight({TensorType::kQ5_0, 256, 16, nullptr, 176}, Backend::WeightUse::kMatMul, 1);
  ASSERT_FALSE(unsupported.ok());
  EXPECT_NE(unsupported.status().message().find("Q5_0"), std::string::npos) << unsupported.status();

  // Row ops.
  const int64_t n = 576, count = 5;
  const std::vector<float> a = Gaussian(n * count, 3), b = Gaussian(n * count, 4), w = Gaussian(n, 5);
  std::vector<float> want(a.size());
  float* da = mem.Put(a);
  float* dw = mem.Put(w);
  float* dout = mem.Put(want);
  gpu.RmsNorm(da, dw, n, count, 1e-5f, dout);
  cpu->RmsNorm(a.data(), w.data(), n, count, 1e-5f, want.data());
  ExpectNear(mem.Get(dout, want.size()), want, 1e-5f, "RmsNorm");

  std::vector<float> g = a;
  float* dg = mem.Put(g);
  gpu.SiluMul(dg, mem.Put(b), n * count);
  cpu->SiluMul(g.data(), b.data(), n * count);
  ExpectNear(mem.Get(dg, g.size()), g, 1e-5f, "SiluMul");

  std::vector<float> sum = a;
  float* dsum = mem.Put(sum);
  gpu.Add(dsum, mem.Put(b), n * count);
  gpu.AddBias(dsum, dw, n, count);
  cpu->Add(sum.data(), b.data(), n * count);
  cpu->AddBias(sum.data(), w.data(), n, count);
  ExpectNear(mem.Get(dsum, sum.size()), sum, 1e-6f, "Add and AddBias");

  const std::vector<int32_t> pick = {4, 0, 4};
  std::vector<float> gathered(pick.size() * n);
  float* dgathered = mem.Put(gathered);
  gpu.GatherRows(da, n, mem.Put(pick), 3, dgathered);
  cpu->GatherRows(a.data(), n, pick.data(), 3, gathered.data());
  ExpectNear(mem.Get(dgathered, gathered.size()), gathered, 0, "GatherRows");

  {
    // Rows of a large vocabulary: a tie for the largest far apart, a NaN
    // at index 0, NaNs and infinities elsewhere, all -inf, all NaN but
    // one (core/argmax.h).
    const int64_t vocab = 151936, rows = 6;
    std::vector<float> logits = Gaussian(static_cast<size_t>(rows * vocab), 9);
    logits[100] = logits[90000] = 9;
    logits[vocab] = NAN;
    for (int64_t i = 2 * vocab; i < 3 * vocab; i += 7) logits[i] = i % 2 ? NAN : -INFINITY;
    logits[3 * vocab + 5] = logits[3 * vocab + 151000] = INFINITY;
    std::fill(logits.begin() + 4 * vocab, logits.begin() + 5 * vocab, -INFINITY);
    std::fill(logits.begin() + 5 * vocab, logits.end(), NAN);
    logits[5 * vocab + 77777] = -1;
    std::vector<int32_t> want(rows);
    cpu->ArgMax(logits.data(), vocab, rows, want.data());
    EXPECT_EQ(want, (std::vector<int32_t>{100, 0, want[2], 5, 0, 77777}));
    std::vector<int32_t> ids(rows, -1);
    int32_t* dids = mem.Put(ids);
    gpu.ArgMax(mem.Put(logits), vocab, rows, dids);
    EXPECT_EQ(mem.Get(dids, ids.size()), want) << "ArgMax";
  }

  const std::vector<float> factors = {1, 1.5f, 2, 4, 8, 1, 1, 3};
  for (bool neox : {false, true}) {
    RopeShape s{4, 16, 16, neox, 10000.0f, 0.5f, nullptr};
    std::vector<float> rot = Gaussian(3 * 4 * 16, 6);
    const std::vector<int32_t> pos = {0, 17, 4095};
    float* drot = mem.Put(rot);
    RopeShape gs = s;
    gs.freq_factors = mem.Put(factors);
    s.freq_factors = factors.data();
    gpu.Rope(drot, 3, mem.Put(pos), gs);
    cpu->Rope(rot.data(), 3, pos.data(), s);
    ExpectNear(mem.Get(drot, rot.size()), rot, 1e-4f, neox ? "Rope neox" : "Rope");
  }

  // StoreKv then Attention over a paged cache: 3 rows of two sequences
  // (blocks of 16 positions, tables out of order), F32, F16 and Q8_0 rows;
  // contexts of 41, 21 and 18 keys (longer ones: AChunksRowsGetTheBitsTheyGetAlone).
  for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0}) {
    SCOPED_TRACE(NameOf(type));
    const int64_t heads = 4, kv_heads = 2, dim = 128, kv_dim = kv_heads * dim, block_rows = 16, blocks = 6;
    const size_t row_bytes = type == TensorType::kQ8_0 ? kv_dim / 32 * 34 : kv_dim * (type == TensorType::kF16 ? 2 : 4);
    const size_t run = block_rows * row_bytes;
    std::vector<uint8_t> host_cache(blocks * 2 * run, 0);
    std::unique_ptr<DeviceBuffer> dev_cache = gpu.Allocate(host_cache.size());
    dev_cache->Zero(0, host_cache.size());
    const std::vector<int32_t> tables = {3, 1, 5, 0, 2};  // Sequence A: {3, 1, 5}; B: {0, 2}.
    const std::vector<int32_t> start = {0, 3, 0};        // Rows: A, B, A.
    // Fill positions 0..40 of A and 0..20 of B, one position per call.
    for (int32_t p = 0; p < 41; ++p) {
      for (int seq = 0; seq < 2; ++seq) {
        if (seq == 1 && p >= 21) continue;
        const std::vector<float> k = Gaussian(kv_dim, 100 + p * 2 + seq), v = Gaussian(kv_dim, 200 + p * 2 + seq);
        const std::vector<int32_t> one_pos = {p}, one_start = {seq == 0 ? 0 : 3};
        const KvLayer host_layer{host_cache.data(), 2 * run, 0, run, block_rows, row_bytes, type};
        const KvLayer dev_layer{dev_cache->data(), 2 * run, 0, run, block_rows, row_bytes, type};
        cpu->StoreKv(k.data(), v.data(), 1, one_pos.data(), {host_layer, tables.data(), one_start.data()}, kv_dim);
        gpu.StoreKv(mem.Put(k), mem.Put(v), 1, mem.Put(one_pos), {dev_layer, mem.Put(tables), mem.Put(one_start)},
                    kv_dim);
      }
    }
    // The same bytes: F16 rounds to nearest even on both; Q8_0's scale and
    // codes come from the same IEEE divisions and round-half-even.
    std::vector<uint8_t> stored(host_cache.size());
    gpu.Download(stored.data(), dev_cache->data(), stored.size());
    EXPECT_EQ(std::memcmp(stored.data(), host_cache.data(), stored.size()), 0) << "StoreKv";
    const std::vector<float> q = Gaussian(3 * heads * dim, 7);
    const std::vector<int32_t> pos = {40, 20, 17};
    const AttentionShape shape{heads, kv_heads, dim, 0.125f};
    std::vector<float> out(q.size());
    float* dout_attn = mem.Put(out);
    gpu.Attention(mem.Put(q), 3, mem.Put(pos),
                  {{dev_cache->data(), 2 * run, 0, run, block_rows, row_bytes, type}, mem.Put(tables), mem.Put(start)},
                  shape, dout_attn);
    cpu->Attention(q.data(), 3, pos.data(),
                   {{host_cache.data(), 2 * run, 0, run, block_rows, row_bytes, type}, tables.data(), start.data()},
                   shape, out.data());
    ExpectNear(mem.Get(dout_attn, out.size()), out, 1e-4f, "Attention");
  }
}

// Attention of a prompt chunk's rows, which the kernel gives several to a
// block when KvBatch says a sequence has that many rows (reading each key
// once for all), must give each row the bits it gets one to a block, and
// the CPU's values: 3 decode rows of sequence B (at positions 0, 31 and
// 19: one warp's tile or part of one) then 12 rows of sequence A at
// positions up to 1,100 (each of the kernel's 8 warps takes several tiles
// of 32 keys, so states are rescaled and merged), so some blocks hold rows
// of both; head dims of 64, 128 and 256, one not a multiple of 32 (80) and
// one not of 4 (66, whose heads are not 8-byte aligned either); groups of
// 1, 2, 3, 4, 5 and 7 query heads a KV head; each cache row type. Cache bytes no position
// wrote are 0xFF (NaN in every type): a key past a row's position must
// never be read.
TEST_F(CudaBackendTest, AChunksRowsGetTheBitsTheyGetAlone) {
  Backend& gpu = *gpu_;
  Backend* cpu = cpu_.get();
  Gpu& mem = *mem_;
  struct Heads {
    int64_t dim, heads, kv_heads;
  };
  // Groups of 2 query heads a KV head at every width; at 128 also 1, 3
  // (a block with a slot empty), 4, 5 and 7 (two blocks a KV head).
  std::vector<Heads> shapes;
  for (const int64_t dim : {64, 128, 256, 80, 66}) shapes.push_back({dim, 4, 2});
  for (const auto& [heads, kv_heads] : {std::pair{3, 3}, {3, 1}, {8, 2}, {5, 1}, {7, 1}}) {
    shapes.push_back({128, heads, kv_heads});
  }
  for (const auto& [dim, heads, kv_heads] : shapes) {
    for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0}) {
      if (type == TensorType::kQ8_0 && dim % 32 != 0) continue;
      SCOPED_TRACE(std::string(NameOf(type)) + " head_dim " + std::to_string(dim) + " heads " +
                   std::to_string(heads) + "/" + std::to_string(kv_heads));
      const int64_t kv_dim = kv_heads * dim, block_rows = 16;
      const int32_t a_positions = 1101, b_positions = 32;
      const int64_t a_blocks = (a_positions + block_rows - 1) / block_rows, b_blocks = 2;
      const int64_t blocks = a_blocks + b_blocks + 1;  // One never used.
      const size_t row_bytes =
          type == TensorType::kQ8_0 ? kv_dim / 32 * 34 : kv_dim * (type == TensorType::kF16 ? 2 : 4);
      const size_t run = block_rows * row_bytes;
      std::vector<uint8_t> cache(blocks * 2 * run, 0xFF);
      const KvLayer host_layer{cache.data(), 2 * run, 0, run, block_rows, row_bytes, type};
      // A's blocks in reverse order, then B's.
      std::vector<int32_t> tables;
      for (int64_t b = a_blocks; b > 0; --b) tables.push_back(static_cast<int32_t>(b));
      tables.push_back(static_cast<int32_t>(a_blocks + 1));
      tables.push_back(0);
      const int32_t b_start = static_cast<int32_t>(a_blocks);
      for (int32_t p = 0; p < a_positions; ++p) {
        for (int seq = 0; seq < 2; ++seq) {
          if (seq == 1 && p >= b_positions) continue;
          const std::vector<float> k = Gaussian(kv_dim, 300 + p * 2 + seq), v = Gaussian(kv_dim, 400 + p * 2 + seq);
          const std::vector<int32_t> one_pos = {p}, one_start = {seq == 0 ? 0 : b_start};
          cpu->StoreKv(k.data(), v.data(), 1, one_pos.data(), {host_layer, tables.data(), one_start.data()}, kv_dim);
        }
      }
      uint8_t* dev_cache = mem.Put(cache);
      const KvLayer dev_layer{dev_cache, 2 * run, 0, run, block_rows, row_bytes, type};
      // B's rows (one sequence's, not a chunk), then A's.
      std::vector<int32_t> pos = {0, 31, 19}, start = {b_start, b_start, b_start};
      for (int32_t p : {1100, 1099, 700, 511, 257, 256, 255, 31, 0, 32, 1000, 600}) {
        pos.push_back(p);
        start.push_back(0);
      }
      const int64_t n = static_cast<int64_t>(pos.size());
      const std::vector<float> q = Gaussian(n * heads * dim, 8);
      const AttentionShape shape{heads, kv_heads, dim, static_cast<float>(1 / std::sqrt(double(dim)))};
      const float* dq = mem.Put(q);
      const int32_t* dpos = mem.Put(pos);
      const KvBatch one_each{dev_layer, mem.Put(tables), mem.Put(start), 1};
      KvBatch chunks = one_each;
      chunks.rows_per_sequence = 12;
      std::vector<float> alone(q.size()), together(q.size()), want(q.size());
      float* dout = mem.Put(alone);
      gpu.Attention(dq, n, dpos, one_each, shape, dout);
      alone = mem.Get(dout, alone.size());
      gpu.Attention(dq, n, dpos, chunks, shape, dout);
      together = mem.Get(dout, together.size());
      ASSERT_EQ(std::memcmp(alone.data(), together.data(), alone.size() * sizeof(float)), 0);
      cpu->Attention(q.data(), n, pos.data(), {host_layer, tables.data(), start.data()}, shape, want.data());
      ExpectNear(together, want, 1e-4f, "Attention");
    }
  }
}

// A CUDA backend made with SWIFTLET_CUDA_GRAPHS set to `graphs` ("1" or
// "0"), the variable restored after.
std::unique_ptr<Backend> MakeGpuWithGraphs(const char* graphs) {
  const char* before = std::getenv("SWIFTLET_CUDA_GRAPHS");
  const std::string saved = before != nullptr ? before : "";
  setenv("SWIFTLET_CUDA_GRAPHS", graphs, 1);
  absl::StatusOr<std::unique_ptr<Backend>> made = MakeCudaBackend(0);
  if (before != nullptr) {
    setenv("SWIFTLET_CUDA_GRAPHS", saved.c_str(), 1);
  } else {
    unsetenv("SWIFTLET_CUDA_GRAPHS");
  }
  EXPECT_TRUE(made.ok()) << made.status();
  return made.ok() ? std::move(*made) : nullptr;
}

// A run of ops repeated as decode steps are: launched one by one on one
// backend and as a CUDA graph on another, the same bits every time, with
// new inputs in the same buffers (what a graph must read afresh) and,
// last, a buffer at another address (arguments the graph must update).
TEST_F(CudaBackendTest, GraphsRunWhatTheOpsSay) {
  const int64_t n = 256, rows = 3;
  std::vector<uint8_t> w(static_cast<size_t>(n) * (n / BlockQ8_0::kElems) * sizeof(BlockQ8_0));
  const std::vector<float> wf = Gaussian(n * n, 5);
  QuantizeRow(TensorType::kQ8_0, wf.data(), w.data(), n * n);
  const WeightView file{TensorType::kQ8_0, n, n, w.data(), w.size() / n};
  const std::vector<float> norm = Gaussian(n, 6);

  struct Run {
    std::unique_ptr<Backend> be;
    std::unique_ptr<ResidentWeight> weight;
    std::unique_ptr<Gpu> mem;
    float *x[2], *h, *y, *norm;
  };
  Run runs[2];
  for (int g = 0; g < 2; ++g) {
    Run& r = runs[g];
    r.be = MakeGpuWithGraphs(g == 0 ? "0" : "1");
    ASSERT_NE(r.be, nullptr);
    auto resident = r.be->PrepareWeight(file, Backend::WeightUse::kMatMul, 1);
    ASSERT_TRUE(resident.ok()) << resident.status();
    r.weight = std::move(*resident);
    r.mem = std::make_unique<Gpu>(*r.be);
    const std::vector<float> zeros(n * rows);
    r.x[0] = r.mem->Put(zeros);
    r.x[1] = r.mem->Put(zeros);
    r.h = r.mem->Put(zeros);
    r.y = r.mem->Put(zeros);
    r.norm = r.mem->Put(norm);
  }
  for (int step = 0; step < 5; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const std::vector<float> input = Gaussian(n * rows, 10 + static_cast<uint32_t>(step));
    std::vector<float> out[2];
    for (int g = 0; g < 2; ++g) {
      Run& r = runs[g];
      Backend& be = *r.be;
      float* x = r.x[step == 4 ? 1 : 0];
      be.Upload(x, input.data(), input.size() * sizeof(float));
      // 6 rounds of 5 launches (the matmul quantizes, then multiplies):
      // past LaunchGraphs' shortest graph (16).
      for (int round = 0; round < 6; ++round) {
        be.RmsNorm(x, r.norm, n, rows, 1e-5f, r.h);
        be.MatMul(r.weight->view(), r.h, rows, r.y);
        be.SiluMul(r.y, r.h, n * rows);
        be.Add(x, r.y, n * rows);
      }
      out[g] = r.mem->Get(x, input.size());
    }
    ASSERT_EQ(std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)), 0);
    ASSERT_NE(std::memcmp(out[0].data(), input.data(), input.size() * sizeof(float)), 0);
  }
  const CudaGraphCounts eager = CudaGraphCountsOf(*runs[0].be);
  const CudaGraphCounts graphs = CudaGraphCountsOf(*runs[1].be);
  EXPECT_EQ(eager.built + eager.replayed, 0u);
  // Step 0 ran launch by launch, step 1 built the graph, 2 to 4 replayed it;
  // step 4's x is another buffer, so nodes were updated.
  EXPECT_EQ(graphs.built, 1u);
  EXPECT_EQ(graphs.replayed, 3u);
  EXPECT_GT(graphs.updated_nodes, 0u);
}

}  // namespace
}  // namespace swiftlet
