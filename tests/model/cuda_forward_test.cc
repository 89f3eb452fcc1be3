// The same model on the CUDA backend and on the CPU: greedy tokens equal for
// the first 16 tokens, and logits close, for the architectures of the
// fixtures (Llama, Qwen2 with QKV biases, Qwen3 with QK norms). F32 weights,
// where both backends compute in float (activations are quantized only for
// quantized weights), so only summation order differs; Q8_0 and K-quant
// mixes once more with looser bounds on the logits. One skip line without
// a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/str_cat.h"
#include "forward_test_util.h"
#include "kernels/cuda/cuda_backend.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "model/model_runner.h"

namespace swiftlet {
namespace {

struct GreedyRun {
  std::vector<int32_t> tokens;             // The continuation.
  std::vector<std::vector<float>> logits;  // At each step.
};

// The prompt's logits, then `steps` tokens one at a time: the model's own
// greedy choice, or `forced[s]` when given (so two backends can be compared
// at every step on the same tokens). Each step's row is asked for both its
// logits and its argmax (Batch::argmax_rows), which must be their first
// largest.
GreedyRun Greedy(const Model& m, const std::vector<int32_t>& prompt, int steps,
                 const std::vector<int32_t>* forced = nullptr) {
  GreedyRun run;
  auto runner = ModelRunner::Create(m, {1, 64, TensorType::kF16, 2});
  EXPECT_TRUE(runner.ok()) << runner.status();
  if (!runner.ok()) return run;
  Batch batch;
  for (size_t i = 0; i < prompt.size(); ++i) {
    batch.Add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  }
  batch.argmax_rows = batch.output_rows;
  int32_t pos = static_cast<int32_t>(prompt.size());
  for (int s = 0; s < steps; ++s) {
    ForwardOutput out;
    const absl::Status st = (*runner)->Forward(batch, out);
    EXPECT_TRUE(st.ok()) << st;
    if (!st.ok()) return run;
    run.logits.emplace_back(out.Row(0), out.Row(0) + out.row_size);
    const auto largest = static_cast<int32_t>(std::max_element(out.Row(0), out.Row(0) + out.row_size) - out.Row(0));
    EXPECT_EQ(std::vector<int32_t>(out.argmax.begin(), out.argmax.end()), std::vector<int32_t>{largest}) << "step " << s;
    const int32_t next = forced != nullptr ? (*forced)[static_cast<size_t>(s)] : largest;
    run.tokens.push_back(next);
    batch = Batch();
    batch.Add(next, pos++, 0, true);
    batch.argmax_rows = batch.output_rows;
  }
  return run;
}

void ExpectRequired(const std::string& why) {
  if (const char* r = std::getenv("SWIFTLET_REQUIRE_GPU"); r != nullptr && std::string(r) == "1") {
    FAIL() << "SWIFTLET_REQUIRE_GPU=1 but no GPU (" << why << ")";
  }
}

TEST(CudaForwardTest, GreedyTokensAndLogitsMatchTheCpu) {
  std::string why;
  if (ListCudaDevices(&why).empty()) {
    ExpectRequired(why);
    GTEST_SKIP() << "no GPU to run the model on (" << why << ")";
  }
  // 13 tokens: the prompt's matmuls span two tiles of 8 rows.
  const std::vector<int32_t> prompt = {1, 40, 77, 300, 12, 5, 99, 200, 31, 8, 150, 42, 7};
  for (const std::string arch : {"llama", "qwen2", "qwen3"}) {
    for (const std::string type : {"F32", "Q8_0", "Q4_K_M", "Q5_K_M"}) {
      SCOPED_TRACE(arch + " " + type);
      const std::string path = WriteTestModel(arch, type);
      auto cpu = Model::Load(path);
      auto gpu = Model::Load(path, nullptr, ComputeDevice::Cuda());
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      const GreedyRun a = Greedy(**cpu, prompt, 16);
      ASSERT_EQ(a.logits.size(), 16u);
      if (type == "F32") {
        // Free-running greedy decoding agrees token for token.
        EXPECT_EQ(Greedy(**gpu, prompt, 16).tokens, a.tokens);
      }
      // On the CPU's tokens, every step's logits agree: within 1e-3 of the
      // largest in F32. In Q8_0 within 5%: both quantize the activations
      // the same way (blocks of 32), so only float sums' order differs. In
      // the K mixes (Q4_K, Q5_K, Q6_K weights) within 8%: the CPU quantizes
      // the activations in blocks of 256, the GPU in blocks of 32, and on
      // the CPU these models against their own weights in F32 differ by up
      // to 2.4% of the largest logit, so the two roundings together by up
      // to about twice that.
      const GreedyRun b = Greedy(**gpu, prompt, 16, &a.tokens);
      ASSERT_EQ(b.logits.size(), 16u);
      for (size_t step = 0; step < 16; ++step) {
        const std::vector<float>& la = a.logits[step];
        const std::vector<float>& lb = b.logits[step];
        float scale = 0;
        for (float v : la) scale = std::max(scale, std::fabs(v));
        const float tol = (type == "F32" ? 1e-3f : type == "Q8_0" ? 5e-2f : 8e-2f) * scale;
        for (size_t i = 0; i < la.size(); ++i) ASSERT_NEAR(lb[i], la[i], tol) << "step " << step << " logit " << i;
      }
      std::remove(path.c_str());
    }
  }
}

// DESIGN.md's batch invariance on the GPU: a sequence's logits are the same
// bits alone, beside another sequence, decoded one token at a time, or with
// its prompt in chunks (the kernels reduce each row in an order of its
// own).
TEST(CudaForwardTest, BatchInvarianceOnTheGpu) {
  std::string why;
  if (ListCudaDevices(&why).empty()) {
    ExpectRequired(why);
    GTEST_SKIP() << "no GPU to run the model on (" << why << ")";
  }
  for (const auto& [arch, type] : std::vector<std::pair<std::string, std::string>>{
           {"llama", "F32"}, {"qwen2", "Q8_0"}, {"qwen3", "Q4_0"}, {"llama", "Q4_K_M"}}) {
    SCOPED_TRACE(arch + " " + type);
    auto m = MakeModel(arch, type, ComputeDevice::Cuda());
    ASSERT_NE(m, nullptr);
    for (TensorType kv : {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0}) {
      const auto alone = RunSeqs(*m, {kSeqA, kSeqB}, 64, false, 1, kv);
      const auto together_1 = RunSeqs(*m, {kSeqA, kSeqB}, 1, true, 1, kv);
      const auto together_5 = RunSeqs(*m, {kSeqA, kSeqB}, 5, true, 1, kv);
      // Both prompts whole in one batch: attention takes A's 12 rows several
      // to a block, and one block holds rows of both.
      const auto together_64 = RunSeqs(*m, {kSeqA, kSeqB}, 64, true, 1, kv);
      const auto chunked_alone = RunSeqs(*m, {kSeqA, kSeqB}, 3, false, 1, kv);
      ASSERT_EQ(alone.size(), 2u);
      for (size_t s = 0; s < 2; ++s) {
        ExpectBitIdentical(alone[s], together_1[s]);
        ExpectBitIdentical(alone[s], together_5[s]);
        ExpectBitIdentical(alone[s], together_64[s]);
        ExpectBitIdentical(alone[s], chunked_alone[s]);
      }
    }
  }
}

// Rows asked for their argmax on the GPU (Backend::ArgMax over the staged
// logits, after the logits rows) get their logits' first largest, with and
// without logits rows beside them.
TEST(CudaForwardTest, ArgMaxRowsGetTheirLogitsFirstLargestOnTheGpu) {
  std::string why;
  if (ListCudaDevices(&why).empty()) {
    ExpectRequired(why);
    GTEST_SKIP() << "no GPU to run the model on (" << why << ")";
  }
  for (const std::string type : {"F32", "Q4_K_M"}) {
    SCOPED_TRACE(type);
    auto m = MakeModel("qwen2", type, ComputeDevice::Cuda());
    ASSERT_NE(m, nullptr);
    ExpectArgMaxRowsAreTheirLogitsFirstLargest(*m);
  }
}

// Where there is no GPU (or no CUDA build), asking for one is a clear error
// at load and when making a context, and a CPU model refuses a context of
// another device.
TEST(CudaForwardTest, DeviceChoiceIsParsedAndAMissingGpuIsAClearError) {
  EXPECT_EQ(*ParseComputeDevice("cpu"), ComputeDevice::Cpu());
  EXPECT_EQ(*ParseComputeDevice("cuda"), ComputeDevice::Cuda());
  EXPECT_EQ(*ParseComputeDevice("cuda:0"), ComputeDevice::Cuda(0));
  EXPECT_EQ(*ParseComputeDevice("cuda:3"), ComputeDevice::Cuda(3));
  EXPECT_EQ(*ParseComputeDevice("cuda:1023"), ComputeDevice::Cuda(1023));
  EXPECT_NE(ComputeDevice::Cuda(1), ComputeDevice::Cuda(0));
  EXPECT_EQ(NameOf(ComputeDevice::Cuda(2)), "cuda:2");
  EXPECT_EQ(NameOf(ComputeDevice::Cpu()), "cpu");
  for (const char* name : {"tpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "cuda:-0", "cuda:+1", "cuda:99999999999", "cuda:1024", "cuda:12345", "cuda:1 ", "cuda1"}) {
    const absl::StatusOr<ComputeDevice> bad = ParseComputeDevice(name);
    ASSERT_FALSE(bad.ok()) << name;
    EXPECT_NE(bad.status().message().find("cpu, cuda, cuda:N"), std::string::npos) << bad.status();
  }

  // Device memory (the GPU KV cache's default size comes from it): the
  // GPU's, read from the driver; never the CPU's.
  EXPECT_EQ(QueryDeviceMemory(ComputeDevice::Cpu()).status().code(), absl::StatusCode::kFailedPrecondition);
  const absl::StatusOr<DeviceMemory> memory = QueryDeviceMemory(ComputeDevice::Cuda());
  if (ListCudaDevices().empty()) {
    EXPECT_EQ(memory.status().code(), absl::StatusCode::kFailedPrecondition) << memory.status();
  } else {
    ASSERT_TRUE(memory.ok()) << memory.status();
    EXPECT_GT(memory->total_bytes, uint64_t{1} << 30);
    EXPECT_GT(memory->free_bytes, 0u);
    EXPECT_LE(memory->free_bytes, memory->total_bytes);
  }

  const std::string path = WriteTestModel("llama", "F32");
  auto cpu = Model::Load(path);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  // A GPU past the last one the process sees: a clear error everywhere.
  const int missing = static_cast<int>(ListCudaDevices().size());
  const absl::StatusOr<std::unique_ptr<Model>> beyond = Model::Load(path, nullptr, ComputeDevice::Cuda(missing));
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.status().code(), absl::StatusCode::kFailedPrecondition) << beyond.status();
  EXPECT_FALSE(ForwardContext::Create(ComputeDevice::Cuda(missing), 1).ok());
  EXPECT_FALSE(QueryDeviceMemory(ComputeDevice::Cuda(missing)).ok());
  if (missing > 0) {
    EXPECT_NE(beyond.status().message().find(StrCat("no GPU ", missing)), std::string::npos) << beyond.status();
  }
  if (!ListCudaDevices().empty()) {
    // A CPU model on a GPU context: refused, naming both.
    auto context = ForwardContext::Create(ComputeDevice::Cuda(), 1);
    ASSERT_TRUE(context.ok()) << context.status();
    const ModelConfig& c = (*cpu)->config();
    auto cache = KvCache::Create({c.n_layer, c.kv_dim(), 1, 8, TensorType::kF16}, uint64_t{1} << 30,
                                 &context->backend());
    ASSERT_TRUE(cache.ok()) << cache.status();
    Batch batch;
    batch.Add(1, 0, 0, true);
    ForwardOutput out;
    const absl::Status st = (*cpu)->Forward(batch, *cache, *context, out);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_NE(st.message().find("on the cpu"), std::string::npos) << st;
    std::remove(path.c_str());
    return;
  }
  auto gpu = Model::Load(path, nullptr, ComputeDevice::Cuda());
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kFailedPrecondition) << gpu.status();
  EXPECT_NE(gpu.status().message().find("CUDA"), std::string::npos) << gpu.status();
  EXPECT_FALSE(ForwardContext::Create(ComputeDevice::Cuda(), 1).ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace swiftlet
