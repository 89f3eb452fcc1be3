// One decode step of the engine at batch B, every sequence sampled
// (temperature 0.8, the whole row; with or without logprobs) or greedy, on a model whose forward is
// next to nothing (64 wide, one layer, Q8_0) and whose vocabulary is a real
// one's (Llama's 32 k ids, DeepSeek's 102 k): the step is then mostly the
// output matmul and what the engine does with each row. The sampled minus
// the greedy step is the cost of drawing the rows; threads = 1 draws them
// one by one on the engine thread, more threads draw them on the pool.
//
//   build/microbench/engine_step_bench [--benchmark_filter=sampled]
//
// Figures: docs/PERFORMANCE.md, "Drawing a step's rows in parallel".
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unistd.h>

#include "engine/engine.h"
#include "model/model.h"
#include "model/random_model.h"
#include "text/tokenizer.h"

namespace swiftlet {
namespace {

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

constexpr const char* kVocabs[] = {"llama-spm", "deepseek-llm"};

const Loaded& ModelWithVocab(int vocab) {
  static Loaded loaded[2];
  Loaded& l = loaded[vocab];
  if (l.model != nullptr) return l;
  RandomModelSpec spec = *RandomModelPreset("tiny");
  spec.n_embd = 64;
  spec.n_layer = 1;
  spec.n_head = 2;
  spec.n_head_kv = 1;
  spec.n_ff = 128;
  spec.n_ctx = 4096;
  spec.weights = *ParseQuantTarget("Q8_0");
  spec.vocab_path = std::string(SWIFTLET_SHARED_DIR) + "/testdata/vocab/ggml-vocab-" + kVocabs[vocab] + ".gguf";
  const std::string path = "/tmp/engine_step_bench." + std::to_string(::getpid()) + "." + kVocabs[vocab] + ".gguf";
  if (!WriteRandomModel(spec, path, 2).ok()) std::abort();
  auto m = Model::Load(path);
  if (!m.ok()) std::abort();
  std::remove(path.c_str());  // Mapped: the pages stay until unmapped.
  l.model = std::move(*m);
  auto t = Tokenizer::FromGguf(l.model->file());
  if (!t.ok()) std::abort();
  l.tokenizer = std::move(*t);
  return l;
}

struct NullSink final : RequestSink {
  void OnTokens(const TokenEvent&) override {}
  void OnFinish(int32_t, FinishReason, const std::string&) override {}
  void OnComplete(const Usage&, const Timings&) override {}
};

// Args: vocabulary (0: 32 k, 1: 102 k), batch, threads, sampled (0:
// greedy, 1: sampled, 2: sampled with logprobs, the top 5).
void BM_DecodeStep(benchmark::State& state) {
  const Loaded& l = ModelWithVocab(static_cast<int>(state.range(0)));
  const int batch = static_cast<int>(state.range(1));
  EngineConfig cfg;
  cfg.threads = static_cast<int>(state.range(2));
  cfg.kv_memory_bytes = uint64_t{256} << 20;
  cfg.context = 4096;
  cfg.max_running = batch;
  auto e = Engine::Create(*l.model, *l.tokenizer, cfg);
  if (!e.ok()) std::abort();
  auto sink = std::make_shared<NullSink>();
  for (int i = 0; i < batch; ++i) {
    Request r;
    r.prompt = {1, static_cast<int32_t>(100 + i), 200, 300};
    r.options.sampling.temperature = state.range(3) != 0 ? 0.8f : 0.0f;
    if (state.range(3) == 2) r.options.top_logprobs = 5;
    r.options.sampling.seed = static_cast<uint64_t>(i);
    r.options.max_tokens = 4000;
    r.options.ignore_eos = true;
    r.sink = sink;
    if (!(*e)->Submit(std::move(r)).accepted()) std::abort();
  }
  for (int i = 0; i < 8; ++i) (*e)->StepForTesting();  // The prompts, then a few decodes.
  for (auto _ : state) {
    if (!(*e)->StepForTesting()) std::abort();
  }
  state.SetItemsProcessed(state.iterations() * batch);  // Rows a second.
  state.counters["n_vocab"] = static_cast<double>(l.model->config().n_vocab);
}

BENCHMARK(BM_DecodeStep)
    ->ArgNames({"vocab", "batch", "threads", "sampled"})
    ->ArgsProduct({{0, 1}, {1, 8, 32}, {1, 2}, {0, 1, 2}})
    ->Iterations(300)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace swiftlet

BENCHMARK_MAIN();
