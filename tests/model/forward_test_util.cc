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

}  // namespace swiftlet
