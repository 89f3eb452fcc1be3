#include "model/random_model.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "core/check.h"
#include "core/parallel_for.h"
#include "core/str_cat.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "kernels/quantize.h"
#include "model/tensor_layout.h"

namespace swiftlet {
namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

// Uniform in [-1, 1), from the top 24 bits so every platform agrees.
float UniformSigned(uint64_t& state) {
  return static_cast<float>(SplitMix64(state) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

// Fills one row of a tensor. Scales keep activations of order one: a
// projection with rows of length n has weights of standard deviation
// 1/sqrt(n), norms are near 1, biases small.
void FillRow(const ExpectedTensor& t, uint64_t tensor_seed, int64_t row, float* out) {
  uint64_t state = tensor_seed ^ (static_cast<uint64_t>(row) * 0xD1B54A32D192ED03ull);
  const int64_t n = t.shape[0];
  const float kSqrt3 = 1.7320508f;
  float scale = kSqrt3 / std::sqrt(static_cast<float>(n));
  float offset = 0.0f;
  switch (t.role) {
    case TensorRole::kNorm:
      scale = 0.1f;
      offset = 1.0f;
      break;
    case TensorRole::kBias:
      scale = 0.1f;
      break;
    case TensorRole::kEmbedding:
      scale = kSqrt3;
      break;
    default:
      break;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = offset + scale * UniformSigned(state);
}

// The n-th string of printable ASCII characters ('!' to '~') of two
// characters, then of three: padding pieces no base token spells.
std::string PaddingPiece(int64_t n) {
  constexpr int64_t kChars = 94;
  int length = 2;
  if (n >= kChars * kChars) n -= kChars * kChars, length = 3;
  std::string s(static_cast<size_t>(length), ' ');
  for (int i = length - 1; i >= 0; --i, n /= kChars) s[static_cast<size_t>(i)] = static_cast<char>('!' + n % kChars);
  return s;
}

// Writes a SentencePiece vocabulary of max(size, kSyntheticVocabBase)
// tokens; `size` is checked by CheckSpec.
void AddSyntheticVocab(GgufWriter& w, int64_t size) {
  // SentencePiece conventions: 0 <unk>, 1 <s>, 2 </s>, then the 256 byte
  // fallback pieces, then printable ASCII with and without the word marker.
  const std::string kWordMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's space.
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    static const char* kHex = "0123456789ABCDEF";
    tokens.push_back(StrCat("<0x", kHex[b >> 4], kHex[b & 15], ">"));
    types.push_back(6);
  }
  for (char c = ' ' + 1; c < 127; ++c) {
    tokens.push_back(kWordMarker + c);
    types.push_back(1);
    tokens.push_back(std::string(1, c));
    types.push_back(1);
  }
  SWIFTLET_CHECK(static_cast<int64_t>(tokens.size()) == kSyntheticVocabBase);
  // Padding: each piece of two or three characters with the marker, then
  // without, so every extra id is a normal piece the tokenizer may use; a
  // piece that spells a base token ("<s>") is left out, so no text has two
  // ids.
  const std::set<std::string> base(tokens.begin(), tokens.end());
  for (int64_t n = 0; static_cast<int64_t>(tokens.size()) < size; ++n) {
    const std::string piece = PaddingPiece(n / 2);
    std::string token = n % 2 == 0 ? kWordMarker + piece : piece;
    if (base.count(token) != 0) continue;
    tokens.push_back(std::move(token));
    types.push_back(1);
  }
  std::vector<float> scores(tokens.size(), 0.0f);
  for (size_t i = 259; i < scores.size(); ++i) scores[i] = -static_cast<float>(i - 259);
  w.Set("tokenizer.ggml.model", GgufValue::String("llama"));
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray(std::move(tokens)));
  w.Set("tokenizer.ggml.scores", GgufValue::Array<float>(GgufType::kFloat32, scores));
  w.Set("tokenizer.ggml.token_type", GgufValue::Array<int32_t>(GgufType::kInt32, types));
  w.Set("tokenizer.ggml.bos_token_id", GgufValue::Uint32(1));
  w.Set("tokenizer.ggml.eos_token_id", GgufValue::Uint32(2));
  w.Set("tokenizer.ggml.unknown_token_id", GgufValue::Uint32(0));
}

// Copies tokenizer.* from `path`; returns the vocabulary size.
absl::StatusOr<int64_t> CopyVocab(const std::string& path, GgufWriter& w) {
  SWIFTLET_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> vocab, GgufFile::Open(path));
  SWIFTLET_ASSIGN_OR_RETURN(const GgufValue* tokens, vocab->GetArray("tokenizer.ggml.tokens"));
  if (tokens->array_type() != GgufType::kString || tokens->array_size() == 0) {
    return absl::InvalidArgumentError(StrCat(path, ": tokenizer.ggml.tokens is not a list of strings"));
  }
  for (const GgufKv& kv : vocab->metadata()) {
    if (kv.key.rfind("tokenizer.", 0) == 0) w.Set(kv.key, kv.value);
  }
  return static_cast<int64_t>(tokens->array_size());
}

absl::Status CheckSpec(const RandomModelSpec& s) {
  auto bad = [](const std::string& what) { return absl::InvalidArgumentError(what); };
  constexpr int64_t kMax = int64_t{1} << 20;
  for (auto [name, v] : {std::pair{"--hidden", s.n_embd}, {"--layers", s.n_layer},
                         {"--heads", s.n_head}, {"--kv-heads", s.n_head_kv},
                         {"--ffn", s.n_ff}, {"--context", s.n_ctx}}) {
    if (v <= 0 || v > kMax) return bad(StrCat(name, " ", v, " is out of range (1 to ", kMax, ")"));
  }
  if (s.n_layer > 1024) return bad(StrCat("--layers ", s.n_layer, " is out of range (1 to 1024)"));
  if (s.n_head % s.n_head_kv != 0) {
    return bad(StrCat("--heads ", s.n_head, " is not a multiple of --kv-heads ", s.n_head_kv));
  }
  if (s.head_dim == 0 && s.n_embd % s.n_head != 0) {
    return bad(StrCat("--hidden ", s.n_embd, " is not a multiple of --heads ", s.n_head,
                      " (give --head-dim)"));
  }
  const int64_t head_dim = s.head_dim ? s.head_dim : s.n_embd / s.n_head;
  if (head_dim <= 0 || head_dim % 2 != 0 || head_dim > 1024) {
    return bad(StrCat("head dimension ", head_dim, " must be even and at most 1024"));
  }
  if (!(s.rope_freq_base > 0) || !(s.rms_eps > 0)) return bad("rope base and RMS epsilon must be positive");
  if (s.vocab_size != 0) {
    if (!s.vocab_path.empty()) return bad("--vocab-size pads the synthetic vocabulary: not with --vocab");
    if (s.vocab_size < kSyntheticVocabBase || s.vocab_size > kMaxSyntheticVocab) {
      return bad(StrCat("--vocab-size ", s.vocab_size, " is out of range (", kSyntheticVocabBase,
                        ", the synthetic vocabulary's own tokens, to ", kMaxSyntheticVocab, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view RandomModelPresetNames() {
  return "tiny, tinyllama-1.1b, smollm2-135m, qwen2.5-0.5b, qwen3-0.6b, llama2-7b";
}

absl::StatusOr<RandomModelSpec> RandomModelPreset(std::string_view preset) {
  RandomModelSpec s;
  s.name = std::string(preset);
  if (preset == "tiny") return s;
  if (preset == "tinyllama-1.1b") {
    s.n_embd = 2048, s.n_layer = 22, s.n_head = 32, s.n_head_kv = 4, s.n_ff = 5632;
    return s;
  }
  if (preset == "llama2-7b") {  // The 7B shape of the GPU figures (issue 28).
    s.n_embd = 4096, s.n_layer = 32, s.n_head = 32, s.n_head_kv = 32, s.n_ff = 11008, s.n_ctx = 4096;
    return s;
  }
  if (preset == "smollm2-135m") {
    s.n_embd = 576, s.n_layer = 30, s.n_head = 9, s.n_head_kv = 3, s.n_ff = 1536;
    s.n_ctx = 8192, s.rope_freq_base = 100000.0, s.tied_embeddings = true;
    return s;
  }
  if (preset == "qwen2.5-0.5b") {
    s.arch = Architecture::kQwen2;
    s.n_embd = 896, s.n_layer = 24, s.n_head = 14, s.n_head_kv = 2, s.n_ff = 4864;
    s.n_ctx = 32768, s.rope_freq_base = 1000000.0, s.rms_eps = 1e-6, s.tied_embeddings = true;
    return s;
  }
  if (preset == "qwen3-0.6b") {
    s.arch = Architecture::kQwen3;
    s.n_embd = 1024, s.n_layer = 28, s.n_head = 16, s.n_head_kv = 8, s.head_dim = 128;
    s.n_ff = 3072, s.n_ctx = 40960, s.rope_freq_base = 1000000.0, s.rms_eps = 1e-6;
    s.tied_embeddings = true;
    return s;
  }
  return absl::InvalidArgumentError(
      StrCat("unknown preset '", preset, "' (choose one of ", RandomModelPresetNames(), ")"));
}

absl::Status WriteRandomModel(const RandomModelSpec& spec, const std::string& path, int threads,
                              const WriteProgressFn& progress) {
  SWIFTLET_RETURN_IF_ERROR(CheckSpec(spec));
  GgufWriter w;
  const std::string arch(ArchitectureName(spec.arch));
  const std::string p = arch + ".";
  w.Set("general.architecture", GgufValue::String(arch));
  w.Set("general.name", GgufValue::String(StrCat("swiftlet random ", spec.name)));
  w.Set("general.file_type", GgufValue::Uint32(spec.weights.llama_file_type));
  w.Set("general.quantization_version", GgufValue::Uint32(2));
  w.Set("swiftlet.random_weights", GgufValue::Bool(true));
  w.Set("swiftlet.seed", GgufValue::Uint64(spec.seed));

  int64_t n_vocab = 0;
  if (spec.vocab_path.empty()) {
    n_vocab = std::max(spec.vocab_size, kSyntheticVocabBase);
    AddSyntheticVocab(w, n_vocab);
  } else {
    SWIFTLET_ASSIGN_OR_RETURN(n_vocab, CopyVocab(spec.vocab_path, w));
  }

  ModelConfig c;
  c.arch = spec.arch;
  c.n_vocab = n_vocab;
  c.n_ctx_train = spec.n_ctx;
  c.n_embd = spec.n_embd;
  c.n_layer = spec.n_layer;
  c.n_head = spec.n_head;
  c.n_head_kv = spec.n_head_kv;
  c.head_dim = spec.head_dim ? spec.head_dim : spec.n_embd / spec.n_head;
  c.n_ff = spec.n_ff;
  c.qkv_bias = spec.arch == Architecture::kQwen2;
  c.qk_norm = spec.arch == Architecture::kQwen3;
  c.tied_embeddings = spec.tied_embeddings;

  w.Set(p + "context_length", GgufValue::Uint32(static_cast<uint32_t>(c.n_ctx_train)));
  w.Set(p + "embedding_length", GgufValue::Uint32(static_cast<uint32_t>(c.n_embd)));
  w.Set(p + "block_count", GgufValue::Uint32(static_cast<uint32_t>(c.n_layer)));
  w.Set(p + "feed_forward_length", GgufValue::Uint32(static_cast<uint32_t>(c.n_ff)));
  w.Set(p + "attention.head_count", GgufValue::Uint32(static_cast<uint32_t>(c.n_head)));
  w.Set(p + "attention.head_count_kv", GgufValue::Uint32(static_cast<uint32_t>(c.n_head_kv)));
  if (c.head_dim * c.n_head != c.n_embd) {
    w.Set(p + "attention.key_length", GgufValue::Uint32(static_cast<uint32_t>(c.head_dim)));
    w.Set(p + "attention.value_length", GgufValue::Uint32(static_cast<uint32_t>(c.head_dim)));
  }
  w.Set(p + "rope.dimension_count", GgufValue::Uint32(static_cast<uint32_t>(c.head_dim)));
  w.Set(p + "rope.freq_base", GgufValue::Float32(static_cast<float>(spec.rope_freq_base)));
  w.Set(p + "attention.layer_norm_rms_epsilon", GgufValue::Float32(static_cast<float>(spec.rms_eps)));
  w.Set(p + "vocab_size", GgufValue::Uint32(static_cast<uint32_t>(c.n_vocab)));

  const std::vector<ExpectedTensor> tensors = ExpectedTensors(c);
  uint64_t total_bytes = 0;
  std::vector<TensorType> types;
  for (const ExpectedTensor& t : tensors) {
    TensorSlot slot{t.name, t.shape, static_cast<int>(c.n_layer)};
    TensorType type = ChooseTensorType(spec.weights, slot, c.tied_embeddings);
    types.push_back(type);
    uint64_t n = 1, bytes = 0;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    if (!RowBytes(type, n, &bytes)) return absl::InternalError("tensor size");
    total_bytes += bytes;
  }
  auto done_bytes = std::make_shared<uint64_t>(0);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const ExpectedTensor& t = tensors[i];
    const TensorType type = types[i];
    const uint64_t tensor_seed = spec.seed * 0x9E3779B97F4A7C15ull ^ Fnv1a(t.name);
    SWIFTLET_RETURN_IF_ERROR(w.AddTensor(
        t.name, type, t.shape,
        [&t, type, tensor_seed, threads, done_bytes, total_bytes, &progress](std::span<uint8_t> out) {
          const int64_t row = t.shape[0];
          int64_t rows = 1;
          for (size_t d = 1; d < t.shape.size(); ++d) rows *= t.shape[d];
          const size_t row_bytes = out.size() / static_cast<size_t>(rows);
          ParallelFor(rows, threads, [&](int64_t begin, int64_t end) {
            std::vector<float> values(static_cast<size_t>(row));
            for (int64_t r = begin; r < end; ++r) {
              FillRow(t, tensor_seed, r, values.data());
              QuantizeRow(type, values.data(), out.data() + static_cast<size_t>(r) * row_bytes, row);
            }
          });
          *done_bytes += out.size();
          if (progress) progress(*done_bytes, total_bytes);
          return absl::OkStatus();
        }));
  }
  return w.WriteFile(path);
}

}  // namespace swiftlet
