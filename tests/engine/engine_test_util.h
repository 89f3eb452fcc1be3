// What the engine tests share: a tiny generated model with its tokenizer,
// a sink that records everything it hears, seeded prompts, and stepping
// an engine until it is idle.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/logprobs.h"
#include "engine/request.h"
#include "engine/sampling.h"
#include "model/model.h"
#include "text/tokenizer.h"

namespace swiftlet {

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// Llama-shaped, 128 wide, 2 layers, Q8_0, context 2048; loaded once per
// process.
const Loaded& TinyModel();

// Records everything a request hears.
struct Recorder final : RequestSink {
  std::map<int32_t, std::vector<int32_t>> ids;
  std::map<int32_t, std::string> text;
  std::map<int32_t, FinishReason> finish;
  std::map<int32_t, int> finish_calls;
  std::vector<TokenEvent> events;
  int completes = 0;
  Usage usage;
  Timings timings;
  std::vector<float> embedding;
  int embeddings = 0;
  bool embedding_before_finish = false;
  void OnEmbedding(const std::vector<float>& e) override {
    embedding = e;
    ++embeddings;
    embedding_before_finish = finish_calls.empty();
  }
  void OnTokens(const TokenEvent& e) override {
    ids[e.choice].insert(ids[e.choice].end(), e.ids.begin(), e.ids.end());
    text[e.choice] += e.text;
    events.push_back(e);
  }
  void OnFinish(int32_t choice, FinishReason r, const std::string&) override {
    finish[choice] = r;
    finish_calls[choice] += 1;
  }
  void OnComplete(const Usage& u, const Timings& t) override {
    usage = u;
    timings = t;
    ++completes;
  }
};

// Greedy decoding of TinyModel written straight against Model::Forward on
// a contiguous cache (no engine, no paging): the reference the engine's
// tokens are compared with.
std::vector<int32_t> ReferenceGreedy(const std::vector<int32_t>& prompt, int n);

// Sampled decoding of TinyModel the same way, one Sampler over the
// prompt and the tokens so far (as the engine seeds a request's first
// choice); ids in `masked` are -inf before the sampler sees the row.
// With `logprobs`: each token's ComputeLogprobs (top `top_logprobs`) on
// the raw row, as the engine reports them.
std::vector<int32_t> ReferenceSampled(const std::vector<int32_t>& prompt, int n, const SamplingParams& params,
                                      const std::vector<int32_t>& masked = {}, int32_t top_logprobs = 0,
                                      std::vector<TokenLogprobs>* logprobs = nullptr);

// `n` token ids drawn from the vocabulary by `seed`.
std::vector<int32_t> Prompt(uint32_t seed, size_t n);

// Steps `e` until nothing runs or waits; a test failure after max_steps.
void RunUntilIdle(Engine& e, int max_steps = 10000);

}  // namespace swiftlet
