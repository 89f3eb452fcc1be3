// Model::Forward through the paged cache: the logits are bit-identical to
// those through the contiguous KvCache, however the prompts are chunked and
// batched, and a prefix-cache hit computes only the rest of a prompt and
// still gives the logits of a cold run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <map>

#include "kv/kv_cache.h"
#include "kv/paged_kv_cache.h"
#include "model/model.h"
#include "model/random_model.h"

namespace swiftlet {
namespace {

std::unique_ptr<Model> MakeModel(const std::string& arch, const std::string& type) {
  RandomModelSpec spec = *RandomModelPreset("tiny");
  spec.arch = *ArchitectureFromName(arch);
  spec.n_embd = 256;
  spec.n_layer = 2;
  spec.n_ff = 512;
  spec.weights = *ParseQuantTarget(type);
  const std::string path = ::testing::TempDir() + "/paged_fwd_" + arch + "_" + type + "." + std::to_string(::getpid()) + ".gguf";  // one per test process
  EXPECT_TRUE(WriteRandomModel(spec, path, 2).ok());
  auto m = Model::Load(path);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

const std::vector<int32_t> kSeqA = {1, 40, 77, 300, 12, 5, 99, 200, 31, 8, 150, 42};
const std::vector<int32_t> kSeqB = {1, 9, 410, 3, 66, 120, 7};
const std::vector<int32_t> kSeqC = {1, 40, 77, 300, 12, 5, 99, 200, 31, 250, 17, 3, 88};

// Logits of every position of `tokens`, through the contiguous cache, the
// whole sequence in one batch: the reference.
std::vector<float> ColdLogits(const Model& m, const std::vector<int32_t>& tokens, TensorType kv) {
  const ModelConfig& c = m.config();
  auto cache = KvCache::Create({c.n_layer, c.kv_dim(), 1, 64, kv}, uint64_t{1} << 30);
  EXPECT_TRUE(cache.ok());
  ForwardContext ctx(1);
  Batch batch;
  for (size_t i = 0; i < tokens.size(); ++i) batch.Add(tokens[i], static_cast<int32_t>(i), 0, true);
  ForwardOutput out;
  EXPECT_TRUE(m.Forward(batch, *cache, ctx, out).ok());
  return {out.values.begin(), out.values.end()};
}

PagedKvCache MakePaged(const Model& m, TensorType kv, int64_t n_blocks) {
  const ModelConfig& c = m.config();
  PagedKvShape shape{.n_layer = c.n_layer, .kv_dim = c.kv_dim(), .block_tokens = 4,
                     .n_blocks = n_blocks, .type = kv, .max_sequences = 8};
  auto cache = PagedKvCache::Create(shape, uint64_t{1} << 30);
  EXPECT_TRUE(cache.ok()) << cache.status();
  return std::move(*cache);
}

// Runs the sequences `work` (cache sequence id -> tokens still to feed,
// starting at the sequence's current length) together, `chunk` tokens of
// each per step, reserving as it goes. Returns each sequence's logits, and
// adds the tokens fed to *fed.
std::map<int32_t, std::vector<float>> RunPaged(const Model& m, PagedKvCache& cache,
                                               const std::map<int32_t, std::vector<int32_t>>& work,
                                               size_t chunk, int threads, int64_t* fed) {
  ForwardContext ctx(threads);
  std::map<int32_t, std::vector<float>> logits;
  std::map<int32_t, size_t> done;
  while (true) {
    Batch batch;
    std::vector<int32_t> owner;
    for (const auto& [seq, tokens] : work) {
      const size_t from = done[seq];
      const size_t to = std::min(tokens.size(), from + chunk);
      if (from == to) continue;
      const int64_t start = cache.length(seq);
      EXPECT_TRUE(cache.Reserve(seq, start + static_cast<int64_t>(to - from)).ok());
      for (size_t i = from; i < to; ++i) {
        batch.Add(tokens[i], static_cast<int32_t>(start + static_cast<int64_t>(i - from)), seq,
                  true);
        owner.push_back(seq);
      }
      done[seq] = to;
    }
    if (batch.size() == 0) break;
    ForwardOutput out;
    const absl::Status st = m.Forward(batch, cache, ctx, out);
    EXPECT_TRUE(st.ok()) << st;
    if (!st.ok()) break;
    *fed += batch.size();
    for (size_t r = 0; r < owner.size(); ++r) {
      logits[owner[r]].insert(logits[owner[r]].end(), out.Row(static_cast<int64_t>(r)),
                              out.Row(static_cast<int64_t>(r)) + out.row_size);
    }
  }
  return logits;
}

void ExpectBitIdentical(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

// The cold logits of positions [from, to) of a sequence.
std::vector<float> Slice(const std::vector<float>& logits, int64_t n_vocab, int64_t from,
                         int64_t to) {
  return {logits.begin() + from * n_vocab, logits.begin() + to * n_vocab};
}

TEST(PagedForwardTest, SameLogitsAsTheContiguousCache) {
  for (const auto& [arch, type] :
       std::vector<std::pair<std::string, std::string>>{{"llama", "F32"}, {"qwen2", "Q8_0"}}) {
    SCOPED_TRACE(arch + " " + type);
    auto m = MakeModel(arch, type);
    ASSERT_NE(m, nullptr);
    for (TensorType kv : {TensorType::kF32, TensorType::kF16}) {
      const std::vector<float> cold_a = ColdLogits(*m, kSeqA, kv);
      const std::vector<float> cold_b = ColdLogits(*m, kSeqB, kv);
      for (size_t chunk : {size_t{1}, size_t{3}, size_t{5}, size_t{64}}) {
        SCOPED_TRACE(chunk);
        PagedKvCache cache = MakePaged(*m, kv, 16);
        const int32_t a = *cache.CreateSequence();
        const int32_t b = *cache.CreateSequence();
        int64_t fed = 0;
        auto logits = RunPaged(*m, cache, {{a, kSeqA}, {b, kSeqB}}, chunk, 2, &fed);
        EXPECT_EQ(fed, static_cast<int64_t>(kSeqA.size() + kSeqB.size()));
        EXPECT_EQ(cache.blocks_in_use(), 3 + 2);  // 12 and 7 positions in blocks of 4.
        ExpectBitIdentical(logits[a], cold_a);
        ExpectBitIdentical(logits[b], cold_b);
      }
    }
  }
}

TEST(PagedForwardTest, PrefixHitComputesOnlyTheRestWithColdLogits) {
  auto m = MakeModel("llama", "Q8_0");
  ASSERT_NE(m, nullptr);
  const int64_t V = m->config().n_vocab;
  for (TensorType kv : {TensorType::kF32, TensorType::kF16}) {
    const std::vector<float> cold_a = ColdLogits(*m, kSeqA, kv);
    const std::vector<float> cold_c = ColdLogits(*m, kSeqC, kv);
    PagedKvCache cache = MakePaged(*m, kv, 16);
    const int32_t a = *cache.CreateSequence();
    int64_t fed = 0;
    ExpectBitIdentical(RunPaged(*m, cache, {{a, kSeqA}}, 5, 2, &fed)[a], cold_a);
    ASSERT_TRUE(cache.Commit(a, kSeqA).ok());
    ASSERT_TRUE(cache.Free(a).ok());  // Its full blocks stay cached.
    EXPECT_EQ(cache.blocks_cached(), 3);

    // kSeqC shares kSeqA's first 9 tokens: two whole blocks of 4.
    const int32_t c = *cache.CreateSequence();
    auto mc = cache.MatchPrefix(c, kSeqC, static_cast<int64_t>(kSeqC.size()) - 1);
    ASSERT_TRUE(mc.ok());
    EXPECT_EQ(*mc, 8);
    // The same prompt again: 11 of its 12 tokens may match, so 8 do.
    const int32_t a2 = *cache.CreateSequence();
    auto ma = cache.MatchPrefix(a2, kSeqA, static_cast<int64_t>(kSeqA.size()) - 1);
    ASSERT_TRUE(ma.ok());
    EXPECT_EQ(*ma, 8);
    EXPECT_EQ(cache.refcount(cache.blocks(c)[0]), 2);

    fed = 0;
    auto logits = RunPaged(*m, cache,
                           {{c, {kSeqC.begin() + 8, kSeqC.end()}},
                            {a2, {kSeqA.begin() + 8, kSeqA.end()}}},
                           2, 2, &fed);
    EXPECT_EQ(fed, static_cast<int64_t>(kSeqC.size() - 8 + kSeqA.size() - 8));
    ExpectBitIdentical(logits[c], Slice(cold_c, V, 8, static_cast<int64_t>(kSeqC.size())));
    ExpectBitIdentical(logits[a2], Slice(cold_a, V, 8, static_cast<int64_t>(kSeqA.size())));
    EXPECT_EQ(cache.prefix_stats().hit_tokens, 16u);
  }
}

TEST(PagedForwardTest, ForkedChoicesDecodeLikeColdRuns) {
  // n > 1 choices: one prompt (10 tokens, a partial last block), forked,
  // each fork decoding its own tokens.
  auto m = MakeModel("llama", "F32");
  ASSERT_NE(m, nullptr);
  const int64_t V = m->config().n_vocab;
  const std::vector<int32_t> prompt(kSeqA.begin(), kSeqA.begin() + 10);
  const std::vector<std::vector<int32_t>> tails = {{5, 6, 7}, {300, 2, 9}, {5, 6, 8}};
  PagedKvCache cache = MakePaged(*m, TensorType::kF16, 16);
  const int32_t root = *cache.CreateSequence();
  int64_t fed = 0;
  RunPaged(*m, cache, {{root, prompt}}, 4, 2, &fed);
  std::map<int32_t, std::vector<int32_t>> work = {{root, tails[0]}};
  for (size_t i = 1; i < tails.size(); ++i) {
    auto f = cache.Fork(root);
    ASSERT_TRUE(f.ok());
    work[*f] = tails[i];
  }
  EXPECT_EQ(cache.blocks_in_use(), 3);
  fed = 0;
  auto logits = RunPaged(*m, cache, work, 1, 2, &fed);
  EXPECT_EQ(fed, 9);
  // The two full blocks stay shared; each choice has its own partial block
  // (two copies and the original) and one more for position 12.
  EXPECT_EQ(cache.blocks_in_use(), 2 + 3 * 2);
  EXPECT_EQ(cache.refcount(cache.blocks(root)[0]), 3);
  EXPECT_EQ(cache.refcount(cache.blocks(root)[1]), 3);
  size_t i = 0;
  for (const auto& [seq, tail] : work) {
    std::vector<int32_t> whole = prompt;
    whole.insert(whole.end(), tail.begin(), tail.end());
    const std::vector<float> cold = ColdLogits(*m, whole, TensorType::kF16);
    ExpectBitIdentical(logits[seq], Slice(cold, V, 10, 13));
    ++i;
  }
  EXPECT_EQ(i, tails.size());
}

}  // namespace
}  // namespace swiftlet
