#include "forward_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "kv/kv_cache.h"
#include "model/random_model.h"

namespace swiftlet {

std::string WriteTestModel(const std::string& arch, const std::string& type) {
  RandomModelSpec spec = *RandomModelPreset("tiny");
  spec.arch = *ArchitectureFromName(arch);
  spec.n_embd = 256;
  spec.n_layer = 2;
  spec.n_ff = 512;
  spec.weights = *ParseQuantTarget(type);
  const std::string path = ::testing::TempDir() + "/fwd_" + arch + "_" + type + "." + std::to_string(::getpid()) + ".gguf";  // one per test process
  EXPECT_TRUE(WriteRandomModel(spec, path, 2).ok());
  return path;
}

std::unique_ptr<Model> MakeModel(const std::string& arch, const std::string& type, ComputeDevice device) {
  auto m = Model::Load(WriteTestModel(arch, type), nullptr, device);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

std::vector<std::vector<float>> RunSeqs(const Model& m, const std::vector<std::vector<int32_t>>& seqs,
                                        int chunk, bool together, int threads, TensorType kv) {
  const ModelConfig& c = m.config();
  auto context = ForwardContext::Create(m.device(), threads);
  EXPECT_TRUE(context.ok()) << context.status();
  if (!context.ok()) return {};
  ForwardContext& ctx = *context;
  auto cache = KvCache::Create({c.n_layer, c.kv_dim(), static_cast<int64_t>(seqs.size()), 64, kv},
                               uint64_t{1} << 30, &ctx.backend());
  EXPECT_TRUE(cache.ok());
  std::vector<std::vector<float>> logits(seqs.size());
  std::vector<size_t> done(seqs.size(), 0);
  auto step = [&](const std::vector<size_t>& which) {
    Batch batch;
    std::vector<size_t> owner;
    for (size_t s : which) {
      for (size_t i = done[s]; i < std::min(seqs[s].size(), done[s] + chunk); ++i) {
        batch.Add(seqs[s][i], static_cast<int32_t>(i), static_cast<int32_t>(s), true);
        owner.push_back(s);
      }
    }
    ForwardOutput out;
    ASSERT_TRUE(m.Forward(batch, *cache, ctx, out).ok());
    for (size_t r = 0; r < owner.size(); ++r) {
      logits[owner[r]].insert(logits[owner[r]].end(), out.Row(r), out.Row(r) + out.row_size);
      ++done[owner[r]];
    }
  };
  auto pending = [&](size_t s) { return done[s] < seqs[s].size(); };
  if (together) {
    while (true) {
      std::vector<size_t> which;
      for (size_t s = 0; s < seqs.size(); ++s) if (pending(s)) which.push_back(s);
      if (which.empty()) break;
      step(which);
    }
  } else {
    for (size_t s = 0; s < seqs.size(); ++s) while (pending(s)) step({s});
  }
  return logits;
}

void ExpectBitIdentical(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

void ExpectArgMaxRowsAreTheirLogitsFirstLargest(const Model& m) {
  const ModelConfig& c = m.config();
  // Rows 0-6 are kSeqB's prompt, 7-18 kSeqA's.
  auto run = [&](const std::vector<int32_t>& output_rows, const std::vector<int32_t>& argmax_rows) {
    ForwardOutput out;
    auto context = ForwardContext::Create(m.device(), 2);
    EXPECT_TRUE(context.ok()) << context.status();
    if (!context.ok()) return out;
    auto cache = KvCache::Create({c.n_layer, c.kv_dim(), 2, 32, TensorType::kF32}, uint64_t{1} << 30,
                                 &context->backend());
    EXPECT_TRUE(cache.ok()) << cache.status();
    if (!cache.ok()) return out;
    Batch batch;
    for (size_t i = 0; i < kSeqB.size(); ++i) batch.Add(kSeqB[i], static_cast<int32_t>(i), 0, false);
    for (size_t i = 0; i < kSeqA.size(); ++i) batch.Add(kSeqA[i], static_cast<int32_t>(i), 1, false);
    batch.output_rows = output_rows;
    batch.argmax_rows = argmax_rows;
    const absl::Status st = m.Forward(batch, *cache, *context, out);
    EXPECT_TRUE(st.ok()) << st;
    return out;
  };
  std::vector<int32_t> every(kSeqB.size() + kSeqA.size());
  for (size_t r = 0; r < every.size(); ++r) every[r] = static_cast<int32_t>(r);
  const ForwardOutput all = run(every, {});
  ASSERT_EQ(all.values.size(), every.size() * static_cast<size_t>(c.n_vocab));
  EXPECT_TRUE(all.argmax.empty());
  const std::vector<int32_t> output_rows = {6, 18, 3};
  const std::vector<int32_t> argmax_rows = {18, 0, 11, 6, 12};
  const ForwardOutput mixed = run(output_rows, argmax_rows);
  ASSERT_EQ(mixed.values.size(), output_rows.size() * static_cast<size_t>(c.n_vocab));
  for (size_t i = 0; i < output_rows.size(); ++i) {
    const float* got = mixed.Row(static_cast<int64_t>(i));
    const float* want = all.Row(output_rows[i]);
    ExpectBitIdentical(std::vector<float>(got, got + c.n_vocab), std::vector<float>(want, want + c.n_vocab));
  }
  ASSERT_EQ(mixed.argmax.size(), argmax_rows.size());
  for (size_t i = 0; i < argmax_rows.size(); ++i) {
    const float* row = all.Row(argmax_rows[i]);
    EXPECT_EQ(mixed.argmax[i], std::max_element(row, row + c.n_vocab) - row) << "argmax row " << argmax_rows[i];
  }
  // Argmax rows alone: no logits come back.
  const ForwardOutput only = run({}, argmax_rows);
  EXPECT_TRUE(only.values.empty());
  EXPECT_EQ(only.argmax, mixed.argmax);
}

}  // namespace swiftlet
