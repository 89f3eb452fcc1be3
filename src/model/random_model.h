// Writes Llama-family GGUF models with seeded random weights: test models of
// any shape and format, and the bundled demo model. The weights are noise
// (fine for load and API testing, meaningless as text); the same spec and
// seed always give the same bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "model/model_config.h"
#include "model/quant_rules.h"

namespace swiftlet {

struct RandomModelSpec {
  Architecture arch = Architecture::kLlama;
  int64_t n_embd = 256;
  int64_t n_layer = 4;
  int64_t n_head = 8;
  int64_t n_head_kv = 4;
  int64_t head_dim = 0;  // 0: n_embd / n_head.
  int64_t n_ff = 768;
  int64_t n_ctx = 2048;
  double rope_freq_base = 10000.0;
  double rms_eps = 1e-5;
  bool tied_embeddings = false;
  // A GGUF whose tokenizer.* metadata is copied (a vocab-only file does);
  // empty for a synthetic byte-fallback SentencePiece vocabulary.
  std::string vocab_path;
  // The synthetic vocabulary's size: 0 for its kSyntheticVocabBase tokens;
  // more pads it with pieces of two or three printable characters, so a
  // model gets a real model's vocabulary size (its head's and embedding's
  // sizes, and the n_vocab floats a sampled row copies) without its
  // tokenizer. Not with vocab_path.
  int64_t vocab_size = 0;
  uint64_t seed = 1;
  QuantTarget weights = {"F32", TensorType::kF32, false, 0};
  std::string name = "random";
};

// The synthetic vocabulary's own tokens (<unk>, <s>, </s>, 256 bytes, 94
// printable characters with and without the word marker), and the most it
// may be padded to (vocab_size).
inline constexpr int64_t kSyntheticVocabBase = 447;
inline constexpr int64_t kMaxSyntheticVocab = int64_t{1} << 20;

// Shapes of real models: "tiny" (the bundled demo), "tinyllama-1.1b",
// "smollm2-135m", "qwen2.5-0.5b", "qwen3-0.6b", "llama2-7b" (the GPU
// benchmark's 7B shape).
absl::StatusOr<RandomModelSpec> RandomModelPreset(std::string_view preset);
std::string_view RandomModelPresetNames();

// Called after each tensor is written: bytes written so far and in all.
using WriteProgressFn = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;

// Checks the spec (positive sizes, heads dividing evenly, rows fitting the
// chosen format) and writes the model to `path`.
absl::Status WriteRandomModel(const RandomModelSpec& spec, const std::string& path,
                              int threads, const WriteProgressFn& progress = nullptr);

}  // namespace swiftlet
