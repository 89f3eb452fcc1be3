// The scalar backend against plain double-precision math written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "kernels/backend.h"
#include "kernels/dequantize.h"
#include "kernels/float16.h"
#include "kernels/gaussian.h"
#include "kernels/packed_weights.h"
#include "kernels/quantize.h"
#include "kernels/vec_dot.h"

namespace swiftlet {
namespace {

// MatMul with quantized weights equals, up to float rounding, the exact dot
// product of the dequantized weights with the dequantized quantized
// activations (the integer block sums must not change the math).
TEST(CpuBackendTest, QuantizedMatMulMatchesDequantizedMath) {
  const int64_t n_in = 512, n_out = 24, rows = 3;
  const std::vector<float> wf = Gaussian(n_in * n_out, 1);
  const std::vector<float> x = Gaussian(n_in * rows, 2);
  auto backend = MakeCpuBackend(2);
  for (TensorType t : {TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0,
                       TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0, TensorType::kQ5_1,
                       TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K}) {
    SCOPED_TRACE(NameOf(t));
    uint64_t row_bytes = 0;
    ASSERT_TRUE(RowBytes(t, n_in, &row_bytes));
    std::vector<uint8_t> w(row_bytes * n_out);
    for (int64_t o = 0; o < n_out; ++o) QuantizeRow(t, &wf[o * n_in], &w[o * row_bytes], n_in);
    WeightView view{t, n_in, n_out, w.data(), row_bytes};
    std::vector<float> y(rows * n_out);
    backend->MatMul(view, x.data(), rows, y.data());

    const TensorType at = ActivationTypeFor(t);
    uint64_t act_bytes = 0;
    ASSERT_TRUE(RowBytes(at, n_in, &act_bytes));
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<uint8_t> aq(act_bytes);
      QuantizeRow(at, &x[r * n_in], aq.data(), n_in);
      std::vector<float> a(n_in), wr(n_in);
      DequantizeRow(at, aq.data(), a.data(), n_in);
      for (int64_t o = 0; o < n_out; ++o) {
        DequantizeRow(t, &w[o * row_bytes], wr.data(), n_in);
        double want = 0, mag = 0;
        for (int64_t i = 0; i < n_in; ++i) {
          want += double(wr[i]) * a[i];
          mag += std::fabs(double(wr[i]) * a[i]);
        }
        EXPECT_NEAR(y[r * n_out + o], want, 1e-5 * mag) << r << "," << o;
      }
    }
  }
}

TEST(CpuBackendTest, RopeRotatesPairsByPositionAndFactor) {
  const int64_t head_dim = 8, n_head = 2;
  const float factors[4] = {1, 2, 4, 8};
  for (bool neox : {false, true}) {
    for (bool scaled : {false, true}) {
      std::vector<float> x = Gaussian(n_head * head_dim * 2, 3);
      const std::vector<float> orig = x;
      const int32_t pos[2] = {0, 7};
      RopeShape s{n_head, head_dim, 6, neox, 100.0f, 1.0f, scaled ? factors : nullptr};
      auto backend = MakeCpuBackend(1);
      backend->Rope(x.data(), 2, pos, s);
      for (int t = 0; t < 2; ++t) {
        for (int h = 0; h < n_head; ++h) {
          const float* o = &orig[(t * n_head + h) * head_dim];
          const float* r = &x[(t * n_head + h) * head_dim];
          for (int i = 0; i < 3; ++i) {
            const double theta = pos[t] * std::pow(100.0, -2.0 * i / 6) / (scaled ? factors[i] : 1);
            const int a = neox ? i : 2 * i, b = neox ? i + 3 : 2 * i + 1;
            EXPECT_NEAR(r[a], o[a] * std::cos(theta) - o[b] * std::sin(theta), 1e-5);
            EXPECT_NEAR(r[b], o[a] * std::sin(theta) + o[b] * std::cos(theta), 1e-5);
          }
          // Dimensions past rope_dim are untouched.
          EXPECT_EQ(r[6], o[6]);
          EXPECT_EQ(r[7], o[7]);
        }
      }
    }
  }
}

// (head_dim, cached positions): a short context within one key block of the
// online softmax, and one spanning three blocks with a SIMD-width head.
class AttentionTest : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(AttentionTest, IsCausalSoftmaxWithGroupedHeads) {
  const auto [dim, n_ctx] = GetParam();
  const int64_t n_head = 4, n_kv = 2;
  const std::vector<float> q = Gaussian(2 * n_head * dim, 4);
  const std::vector<float> k = Gaussian(n_ctx * n_kv * dim, 5);
  const std::vector<float> v = Gaussian(n_ctx * n_kv * dim, 6);
  for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0}) {
    // Q8_0 rows hold whole heads of 32-element blocks.
    if (type == TensorType::kQ8_0 && dim % 32 != 0) continue;
    // The cache's stored rows; F16 and Q8_0 rows are what attention must
    // read back.
    std::vector<uint8_t> kb, vb;
    std::vector<float> kr(k), vr(v);
    if (type == TensorType::kQ8_0) {
      const size_t blocks = k.size() / 32;
      kb.resize(blocks * sizeof(BlockQ8_0));
      vb.resize(blocks * sizeof(BlockQ8_0));
      QuantizeRowQ8_0(k.data(), reinterpret_cast<BlockQ8_0*>(kb.data()), static_cast<int64_t>(k.size()));
      QuantizeRowQ8_0(v.data(), reinterpret_cast<BlockQ8_0*>(vb.data()), static_cast<int64_t>(v.size()));
      DequantizeRow(TensorType::kQ8_0, kb.data(), kr.data(), static_cast<int64_t>(k.size()));
      DequantizeRow(TensorType::kQ8_0, vb.data(), vr.data(), static_cast<int64_t>(v.size()));
    } else if (type == TensorType::kF16) {
      kb.resize(k.size() * 2);
      vb.resize(v.size() * 2);
      for (size_t i = 0; i < k.size(); ++i) {
        reinterpret_cast<uint16_t*>(kb.data())[i] = Fp32ToFp16(k[i]);
        reinterpret_cast<uint16_t*>(vb.data())[i] = Fp32ToFp16(v[i]);
        kr[i] = Fp16ToFp32(Fp32ToFp16(k[i]));
        vr[i] = Fp16ToFp32(Fp32ToFp16(v[i]));
      }
    } else {
      kb.assign(reinterpret_cast<const uint8_t*>(k.data()), reinterpret_cast<const uint8_t*>(k.data() + k.size()));
      vb.assign(reinterpret_cast<const uint8_t*>(v.data()), reinterpret_cast<const uint8_t*>(v.data() + v.size()));
    }
    const size_t row_bytes = type == TensorType::kQ8_0 ? n_kv * dim / 32 * sizeof(BlockQ8_0)
                                                       : n_kv * dim * (type == TensorType::kF16 ? 2 : 4);
    // Blocks of 2 positions stored in reverse order, as a paged cache might
    // hold them: attention must follow the block table, not assume one run.
    constexpr int64_t kBlockRows = 2;
    const int64_t n_blocks = (n_ctx + kBlockRows - 1) / kBlockRows;
    const size_t rows_bytes = kBlockRows * row_bytes;  // One block's K (or V) rows.
    // Each block holds its K rows then its V rows, as a paged cache's do.
    std::vector<uint8_t> paged(n_blocks * 2 * rows_bytes);
    std::vector<int32_t> table(n_blocks);
    for (int64_t b = 0; b < n_blocks; ++b) {
      const int64_t stored_at = n_blocks - 1 - b;
      const size_t src = b * rows_bytes, dst = stored_at * 2 * rows_bytes;
      const size_t len = std::min(rows_bytes, kb.size() - src);
      std::copy_n(kb.data() + src, len, paged.data() + dst);
      std::copy_n(vb.data() + src, len, paged.data() + dst + rows_bytes);
      table[b] = static_cast<int32_t>(stored_at);
    }
    const KvLayer layer{paged.data(), 2 * rows_bytes, 0, rows_bytes, kBlockRows, row_bytes, type};
    const int32_t table_start[2] = {0, 0};
    const KvBatch kv{layer, table.data(), table_start};
    const int32_t pos[2] = {2, static_cast<int32_t>(n_ctx - 1)};
    std::vector<float> out(2 * n_head * dim);
    auto backend = MakeCpuBackend(1);
    backend->Attention(q.data(), 2, pos, kv, {n_head, n_kv, dim, 0.35f}, out.data());
    // Batch invariance: the second row alone, on two threads, is the same
    // bit for bit.
    std::vector<float> alone(n_head * dim);
    MakeCpuBackend(2)->Attention(q.data() + n_head * dim, 1, pos + 1, kv, {n_head, n_kv, dim, 0.35f},
                                 alone.data());
    for (int64_t i = 0; i < n_head * dim; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(alone[i]), std::bit_cast<uint32_t>(out[n_head * dim + i]));
    }
    for (int t = 0; t < 2; ++t) {
      for (int h = 0; h < n_head; ++h) {
        const int kvh = h / 2;
        std::vector<double> p(pos[t] + 1);
        double max = -1e300, sum = 0;
        for (int j = 0; j <= pos[t]; ++j) {
          double dot = 0;
          for (int i = 0; i < dim; ++i) dot += q[(t * n_head + h) * dim + i] * kr[(j * n_kv + kvh) * dim + i];
          p[j] = dot * 0.35;
          max = std::max(max, p[j]);
        }
        for (double& e : p) sum += (e = std::exp(e - max));
        for (int i = 0; i < dim; ++i) {
          double want = 0;
          for (int j = 0; j <= pos[t]; ++j) want += p[j] / sum * vr[(j * n_kv + kvh) * dim + i];
          EXPECT_NEAR(out[(t * n_head + h) * dim + i], want, 1e-5);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionTest,
                         ::testing::Values(std::pair<int64_t, int64_t>{8, 5},
                                           std::pair<int64_t, int64_t>{16, 77},
                                           std::pair<int64_t, int64_t>{64, 40}));

TEST(CpuBackendTest, RmsNormAndSiluMul) {
  const std::vector<float> x = Gaussian(2 * 16, 7);
  const std::vector<float> w = Gaussian(16, 8);
  std::vector<float> y(32);
  auto backend = MakeCpuBackend(1);
  backend->RmsNorm(x.data(), w.data(), 16, 2, 1e-5f, y.data());
  for (int t = 0; t < 2; ++t) {
    double ss = 0;
    for (int i = 0; i < 16; ++i) ss += double(x[t * 16 + i]) * x[t * 16 + i];
    const double inv = 1 / std::sqrt(ss / 16 + 1e-5);
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(y[t * 16 + i], x[t * 16 + i] * inv * w[i], 1e-5);
  }
  std::vector<float> g = {-3, -0.5f, 0, 2}, u = {1, 2, 3, 4};
  backend->SiluMul(g.data(), u.data(), 4);
  const double gv[4] = {-3, -0.5, 0, 2};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(g[i], gv[i] / (1 + std::exp(-gv[i])) * (i + 1), 1e-6);
}

}  // namespace
}  // namespace swiftlet

namespace swiftlet {
namespace {

// MatMuls must give exactly what separate MatMul calls give, with weights of
// different formats and layouts sharing one input.
TEST(CpuBackendTest, MatMulsEqualsSeparateMatMulsBitForBit) {
  const int64_t n_in = 512, rows = 5;
  const std::vector<float> x = Gaussian(n_in * rows, 21);
  struct W {
    TensorType type;
    int64_t n_out;
    std::vector<uint8_t> bytes;
    std::unique_ptr<PackedWeight> packed;
    WeightView view;
  };
  std::vector<W> ws;
  for (auto [type, n_out] : {std::pair{TensorType::kQ4_K, 48}, {TensorType::kQ6_K, 33},
                             {TensorType::kQ8_0, 20}, {TensorType::kF16, 7}}) {
    W w{type, n_out, {}, nullptr, {}};
    uint64_t row_bytes = 0;
    ASSERT_TRUE(RowBytes(type, n_in, &row_bytes));
    const std::vector<float> f = Gaussian(n_in * n_out, 30 + static_cast<uint32_t>(type));
    w.bytes.resize(row_bytes * n_out);
    for (int64_t o = 0; o < n_out; ++o) QuantizeRow(type, f.data() + o * n_in, w.bytes.data() + o * row_bytes, n_in);
    w.view = {type, n_in, n_out, w.bytes.data(), row_bytes};
    w.packed = PackWeight(w.view, ChosenKernelIsa(), 1);
    if (w.packed != nullptr) w.view = w.packed->view();
    ws.push_back(std::move(w));
  }
  for (int threads : {1, 2}) {
    auto backend = MakeCpuBackend(threads);
    std::vector<std::vector<float>> together(ws.size()), alone(ws.size());
    std::vector<MatMulJob> jobs;
    for (size_t i = 0; i < ws.size(); ++i) {
      together[i].assign(ws[i].n_out * rows, -1);
      alone[i].assign(ws[i].n_out * rows, -2);
      jobs.push_back({ws[i].view, together[i].data()});
      backend->MatMul(ws[i].view, x.data(), rows, alone[i].data());
    }
    backend->MatMuls(jobs, x.data(), rows);
    for (size_t i = 0; i < ws.size(); ++i) {
      for (size_t k = 0; k < alone[i].size(); ++k) {
        ASSERT_EQ(std::bit_cast<uint32_t>(together[i][k]), std::bit_cast<uint32_t>(alone[i][k]))
            << NameOf(ws[i].type) << " element " << k;
      }
    }
  }
}

}  // namespace
}  // namespace swiftlet

namespace swiftlet {
namespace {

// A batch large enough for the pool (several rows of model width) gives
// each row exactly what that row alone gives on one thread: the row passes
// may split a batch over threads but never change or skip a row.
TEST(CpuBackendTest, RowPassesOnThePoolEqualOneRowAtATimeBitForBit) {
  const int64_t n = 2048, rows = 13;
  const std::vector<float> x = Gaussian(n * rows, 41), w = Gaussian(n, 42);
  auto pool = MakeCpuBackend(2);
  auto one = MakeCpuBackend(1);
  auto same = [](const float* a, const float* b, int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
      if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return i;
    }
    return int64_t{-1};
  };

  std::vector<float> batch(n * rows), row(n);
  pool->RmsNorm(x.data(), w.data(), n, rows, 1e-5f, batch.data());
  for (int64_t t = 0; t < rows; ++t) {
    one->RmsNorm(x.data() + t * n, w.data(), n, 1, 1e-5f, row.data());
    ASSERT_EQ(same(batch.data() + t * n, row.data(), n), -1) << "RmsNorm row " << t;
  }

  // Not a multiple of the element-wise task size.
  const int64_t elems = n * rows - 5;
  std::vector<float> sum_batch(x.begin(), x.begin() + elems), sum_one = sum_batch;
  const std::vector<float> addend = Gaussian(elems, 43);
  pool->Add(sum_batch.data(), addend.data(), elems);
  for (int64_t i = 0; i < elems; ++i) one->Add(sum_one.data() + i, addend.data() + i, 1);
  ASSERT_EQ(same(sum_batch.data(), sum_one.data(), elems), -1) << "Add";

  const RopeShape s{32, 64, 64, false, 10000.0f, 1.0f, nullptr};
  std::vector<int32_t> positions(rows);
  for (int64_t t = 0; t < rows; ++t) positions[t] = static_cast<int32_t>(3 * t + 1);
  std::vector<float> rot(x.begin(), x.begin() + s.n_head * s.head_dim * rows);
  pool->Rope(rot.data(), rows, positions.data(), s);
  for (int64_t t = 0; t < rows; ++t) {
    std::vector<float> r(x.begin() + t * s.n_head * s.head_dim, x.begin() + (t + 1) * s.n_head * s.head_dim);
    one->Rope(r.data(), 1, &positions[t], s);
    ASSERT_EQ(same(rot.data() + t * s.n_head * s.head_dim, r.data(), s.n_head * s.head_dim), -1)
        << "Rope row " << t;
  }

  // MatMul quantizes its activation rows on the pool too.
  for (TensorType type : {TensorType::kQ8_0, TensorType::kQ4_K}) {
    const int64_t n_out = 64;
    uint64_t row_bytes = 0;
    ASSERT_TRUE(RowBytes(type, n, &row_bytes));
    const std::vector<float> f = Gaussian(n * n_out, 44);
    std::vector<uint8_t> bytes(row_bytes * n_out);
    for (int64_t o = 0; o < n_out; ++o) QuantizeRow(type, f.data() + o * n, bytes.data() + o * row_bytes, n);
    WeightView view{type, n, n_out, bytes.data(), row_bytes};
    std::unique_ptr<PackedWeight> packed = PackWeight(view, ChosenKernelIsa(), 1);
    if (packed != nullptr) view = packed->view();
    std::vector<float> y_batch(n_out * rows), y_row(n_out);
    pool->MatMul(view, x.data(), rows, y_batch.data());
    for (int64_t t = 0; t < rows; ++t) {
      one->MatMul(view, x.data() + t * n, 1, y_row.data());
      ASSERT_EQ(same(y_batch.data() + t * n_out, y_row.data(), n_out), -1)
          << NameOf(type) << " MatMul row " << t;
    }
  }
}

}  // namespace
}  // namespace swiftlet

namespace swiftlet {
namespace {

// The memory ops and the row ops Model::Forward runs between matmuls:
// allocation, the copies across the bus, the bias add (on the pool too)
// and the gather of requested rows, against plain loops.
TEST(CpuBackendTest, MemoryBiasAndGatherOps) {
  auto backend = MakeCpuBackend(2);
  EXPECT_TRUE(backend->SharesHostMemory());
  std::unique_ptr<DeviceBuffer> buffer = backend->Allocate(1000);
  ASSERT_NE(buffer, nullptr);
  EXPECT_GE(buffer->bytes(), 1000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % 64, 0u);
  EXPECT_NE(backend->Allocate(0), nullptr);  // An empty step's arrays.
  for (size_t i = 0; i < 1000; ++i) buffer->data()[i] = static_cast<uint8_t>(i * 7);
  buffer->CopyWithin(600, 100, 300);
  buffer->Zero(10, 20);
  for (size_t i = 0; i < 1000; ++i) {
    const uint8_t want = i >= 10 && i < 30    ? 0
                         : i >= 600 && i < 900 ? static_cast<uint8_t>((i - 500) * 7)
                                               : static_cast<uint8_t>(i * 7);
    ASSERT_EQ(buffer->data()[i], want) << i;
  }

  const int64_t n = 2048, rows = 9;
  const std::vector<float> x = Gaussian(n * rows, 51), bias = Gaussian(n, 52);
  std::unique_ptr<DeviceBuffer> dev = backend->Allocate(x.size() * sizeof(float));
  backend->Upload(dev->data(), x.data(), x.size() * sizeof(float));
  float* y = reinterpret_cast<float*>(dev->data());
  backend->AddBias(y, bias.data(), n, rows);
  std::vector<float> back(x.size());
  backend->Download(back.data(), y, back.size() * sizeof(float));
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(back[t * n + i], x[t * n + i] + bias[i]) << t << "," << i;
  }

  const int32_t pick[4] = {8, 0, 3, 8};
  std::vector<float> gathered(4 * n);
  backend->GatherRows(x.data(), n, pick, 4, gathered.data());
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(std::equal(gathered.begin() + r * n, gathered.begin() + (r + 1) * n,
                           x.begin() + pick[r] * n))
        << "row " << r;
  }
}

// StoreKv writes each batch row's K and V at its position through its own
// sequence's block table, in the layer's place within each block.
TEST(CpuBackendTest, StoreKvFollowsEachRowsBlockTable) {
  const int64_t kv_dim = 8, block_rows = 2;
  const size_t row_bytes = kv_dim * 4, run = block_rows * row_bytes;
  // Three blocks, each: layer 0's K and V runs, then layer 1's.
  std::vector<uint8_t> memory(3 * 4 * run, 0);
  const KvLayer layer1{memory.data(), 4 * run, 2 * run, 3 * run, block_rows, row_bytes, TensorType::kF32};
  // Sequence A owns blocks {2, 0}, sequence B block {1}.
  const int32_t tables[3] = {2, 0, 1};
  const int32_t table_start[3] = {0, 0, 2};   // Rows: A, A, B.
  const int32_t positions[3] = {1, 2, 0};
  const std::vector<float> k = Gaussian(3 * kv_dim, 53), v = Gaussian(3 * kv_dim, 54);
  MakeCpuBackend(1)->StoreKv(k.data(), v.data(), 3, positions, {layer1, tables, table_start}, kv_dim);
  auto row_at = [&](int32_t block, size_t offset, int64_t r) {
    return reinterpret_cast<const float*>(memory.data() + block * 4 * run + offset + r * row_bytes);
  };
  // (block, row within it) of each batch row: A pos 1 -> block 2 row 1;
  // A pos 2 -> block 0 row 0; B pos 0 -> block 1 row 0.
  const int32_t want_block[3] = {2, 0, 1};
  const int64_t want_row[3] = {1, 0, 0};
  for (int t = 0; t < 3; ++t) {
    EXPECT_TRUE(std::equal(k.begin() + t * kv_dim, k.begin() + (t + 1) * kv_dim,
                           row_at(want_block[t], 2 * run, want_row[t])))
        << "K of row " << t;
    EXPECT_TRUE(std::equal(v.begin() + t * kv_dim, v.begin() + (t + 1) * kv_dim,
                           row_at(want_block[t], 3 * run, want_row[t])))
        << "V of row " << t;
  }
  // Nothing else was written: 6 rows of 48 hold data.
  int64_t nonzero_rows = 0;
  for (size_t r = 0; r < memory.size() / row_bytes; ++r) {
    const float* p = reinterpret_cast<const float*>(memory.data() + r * row_bytes);
    nonzero_rows += std::any_of(p, p + kv_dim, [](float f) { return f != 0; });
  }
  EXPECT_EQ(nonzero_rows, 6);
}

}  // namespace
}  // namespace swiftlet
