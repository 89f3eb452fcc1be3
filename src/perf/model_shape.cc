#include "perf/model_shape.h"

#include <vector>

#include "core/checked_math.h"
#include "core/str_cat.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/model_header.h"
#include "model/quant_rules.h"
#include "model/tensor_layout.h"

namespace swiftlet {
namespace {

// The GGUF reader's bounds (model/model_config.cc), so a shape accepted here
// is one a file could carry; products of them stay far from overflow.
constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxContext = int64_t{1} << 24;
constexpr int64_t kMaxVocab = int64_t{1} << 24;

absl::Status CheckCount(std::string_view field, int64_t value, int64_t max) {
  if (value < 1 || value > max) {
    return absl::InvalidArgumentError(
        StrCat("model shape: ", field, " = ", value, " is outside 1..", max));
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelConfig> ConfigOfShape(const ModelShape& s) {
  SWIFTLET_RETURN_IF_ERROR(CheckModelShape(s));
  ModelConfig c;
  SWIFTLET_ASSIGN_OR_RETURN(c.arch, ArchitectureFromName(s.arch));
  c.n_vocab = s.n_vocab;
  c.n_ctx_train = s.n_ctx_train;
  c.n_embd = s.n_embd;
  c.n_layer = s.n_layer;
  c.n_head = s.n_head;
  c.n_head_kv = s.n_head_kv;
  c.head_dim = s.head_dim;
  c.rope_dim = s.head_dim;
  c.n_ff = s.n_ff;
  c.qkv_bias = c.arch == Architecture::kQwen2;
  c.qk_norm = c.arch == Architecture::kQwen3;
  c.tied_embeddings = s.tied_embeddings;
  return c;
}

uint64_t SumBytes(const ModelCost& cost) {
  uint64_t total = 0;
  for (const TensorTypeTotal& t : cost.types) total += t.bytes;  // Each is bounded by a file.
  return total;
}

}  // namespace

absl::Status CheckModelShape(const ModelShape& s) {
  if (auto arch = ArchitectureFromName(s.arch); !arch.ok()) {
    return absl::InvalidArgumentError(StrCat("model shape: ", arch.status().message()));
  }
  SWIFTLET_RETURN_IF_ERROR(CheckCount("n_vocab", s.n_vocab, kMaxVocab));
  SWIFTLET_RETURN_IF_ERROR(CheckCount("n_ctx_train", s.n_ctx_train, kMaxContext));
  SWIFTLET_RETURN_IF_ERROR(CheckCount("n_embd", s.n_embd, kMaxDim));
  SWIFTLET_RETURN_IF_ERROR(CheckCount("n_layer", s.n_layer, kMaxLayers));
  SWIFTLET_RETURN_IF_ERROR(CheckCount("n_head", s.n_head, kMaxDim));
  SWIFTLET_RETURN_IF_ERROR(CheckCount("n_head_kv", s.n_head_kv, kMaxDim));
  SWIFTLET_RETURN_IF_ERROR(CheckCount("head_dim", s.head_dim, kMaxDim));
  SWIFTLET_RETURN_IF_ERROR(CheckCount("n_ff", s.n_ff, kMaxDim));
  if (s.n_head % s.n_head_kv != 0) {
    return absl::InvalidArgumentError(StrCat("model shape: n_head ", s.n_head,
                                             " is not a multiple of n_head_kv ", s.n_head_kv));
  }
  if (s.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(StrCat("model shape: head_dim ", s.head_dim, " is odd"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelSizing> SizeModelShape(const ModelShape& shape,
                                           std::string_view weight_format) {
  SWIFTLET_ASSIGN_OR_RETURN(const ModelConfig config, ConfigOfShape(shape));
  auto target = ParseQuantTarget(weight_format);
  if (!target.ok()) {
    return absl::InvalidArgumentError(StrCat("weight format: ", target.status().message()));
  }
  std::vector<TensorInfo> tensors;
  for (const ExpectedTensor& e : ExpectedTensors(config)) {
    const TensorSlot slot{e.name, e.shape, static_cast<int>(config.n_layer)};
    const TensorType type = ChooseTensorType(*target, slot, config.tied_embeddings);
    uint64_t elements = 1;
    for (int64_t d : e.shape) {
      if (!CheckedMul(elements, static_cast<uint64_t>(d), &elements)) {
        return absl::InvalidArgumentError(StrCat("model shape: tensor ", e.name, " is too large"));
      }
    }
    uint64_t row_bytes = 0;
    uint64_t bytes = 0;
    const uint64_t row = static_cast<uint64_t>(e.shape[0]);
    if (!RowBytes(type, row, &row_bytes) || !CheckedMul(row_bytes, elements / row, &bytes)) {
      return absl::InvalidArgumentError(StrCat("model shape: tensor ", e.name, " of ",
                                               ShapeString(e.shape), " cannot be stored as ",
                                               NameOf(type)));
    }
    tensors.push_back({e.name, type, elements, bytes});
  }
  ModelSizing sizing;
  sizing.shape = shape;
  SWIFTLET_ASSIGN_OR_RETURN(sizing.cost, ComputeModelCost(config, tensors));
  sizing.weights_bytes = SumBytes(sizing.cost);
  sizing.file_bytes = sizing.weights_bytes;
  sizing.weight_format = std::string(target->name);
  return sizing;
}

absl::StatusOr<ModelSizing> SizeModelFile(const std::string& path) {
  SWIFTLET_ASSIGN_OR_RETURN(const ModelHeader header, ReadModelHeader(path));
  ModelSizing sizing;
  sizing.shape = ShapeOfConfig(header.config);
  auto cost = ComputeModelCost(header.config, header.tensors);
  if (!cost.ok()) return absl::InvalidArgumentError(StrCat(path, ": ", cost.status().message()));
  sizing.cost = *std::move(cost);
  sizing.weights_bytes = SumBytes(sizing.cost);
  sizing.file_bytes = header.file_bytes;
  if (!sizing.cost.types.empty()) {
    sizing.weight_format = std::string(NameOf(sizing.cost.types[0].type));
  }
  return sizing;
}

std::string_view WeightFormatNames() { return QuantTargetNames(); }

ModelShape ShapeOfConfig(const ModelConfig& c) {
  ModelShape s;
  s.arch = std::string(ArchitectureName(c.arch));
  s.n_vocab = c.n_vocab;
  s.n_ctx_train = c.n_ctx_train;
  s.n_embd = c.n_embd;
  s.n_layer = c.n_layer;
  s.n_head = c.n_head;
  s.n_head_kv = c.n_head_kv;
  s.head_dim = c.head_dim;
  s.n_ff = c.n_ff;
  s.tied_embeddings = c.tied_embeddings;
  return s;
}

}  // namespace swiftlet
