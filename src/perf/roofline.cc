#include "perf/roofline.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/str_cat.h"
#include "kernels/vec_dot.h"
#include "model/model.h"
#include "model/tensor_layout.h"

namespace swiftlet {
namespace {

bool StreamedPerToken(TensorRole role, bool tied) {
  switch (role) {
    case TensorRole::kAttnQ:
    case TensorRole::kAttnK:
    case TensorRole::kAttnV:
    case TensorRole::kAttnOutput:
    case TensorRole::kFfnGate:
    case TensorRole::kFfnUp:
    case TensorRole::kFfnDown:
    case TensorRole::kOutput:
      return true;
    case TensorRole::kEmbedding:
      return tied;  // Then it is the head, read whole for every token.
    case TensorRole::kNorm:
    case TensorRole::kBias:
      return false;
  }
  return false;
}

}  // namespace

absl::StatusOr<ModelCost> ComputeModelCost(const Model& model) {
  return ComputeModelCost(model.config(), model.Tensors());
}

absl::StatusOr<ModelCost> ComputeModelCost(const ModelConfig& config,
                                           const std::vector<TensorInfo>& tensors) {
  auto find = [&](const std::string& name) -> const TensorInfo* {
    for (const TensorInfo& t : tensors) {
      if (t.name == name) return &t;
    }
    return nullptr;
  };
  ModelCost cost;
  std::map<TensorType, TensorTypeTotal> by_type;
  for (const TensorInfo& t : tensors) {
    cost.n_params += t.n_elements;
    TensorTypeTotal& total = by_type[t.type];
    total.type = t.type;
    ++total.tensors;
    total.bytes += t.n_bytes;
  }
  for (const auto& [type, total] : by_type) cost.types.push_back(total);
  std::sort(cost.types.begin(), cost.types.end(),
            [](const TensorTypeTotal& a, const TensorTypeTotal& b) { return a.bytes > b.bytes; });

  for (const ExpectedTensor& e : ExpectedTensors(config)) {
    if (!StreamedPerToken(e.role, config.tied_embeddings)) continue;
    const TensorInfo* t = find(e.name);
    if (t == nullptr) return absl::InvalidArgumentError(StrCat("tensor '", e.name, "' is missing"));
    cost.weight_bytes_per_token += t->n_bytes;
    // One multiply-add per weight element per token.
    if (ActivationTypeFor(t->type) == TensorType::kF32) {
      cost.float_macs_per_token += t->n_elements;
    } else {
      cost.int8_macs_per_token += t->n_elements;
    }
  }
  cost.attn_macs_per_position = static_cast<uint64_t>(config.n_layer) * 2 *
                                static_cast<uint64_t>(config.n_head) *
                                static_cast<uint64_t>(config.head_dim);
  return cost;
}

double MemoryBoundTokS(double bandwidth_gbs, uint64_t weight_bytes_per_token,
                       int64_t tokens_per_pass) {
  if (weight_bytes_per_token == 0 || bandwidth_gbs <= 0) return 0;
  return bandwidth_gbs * 1e9 * static_cast<double>(tokens_per_pass) /
         static_cast<double>(weight_bytes_per_token);
}

double ComputeBoundTokS(const ModelCost& cost, double int8_peak_gops, double fp32_peak_gflops,
                        double mean_context) {
  const double int8_ops = 2.0 * static_cast<double>(cost.int8_macs_per_token);
  const double float_ops = 2.0 * (static_cast<double>(cost.float_macs_per_token) +
                                  static_cast<double>(cost.attn_macs_per_position) * mean_context);
  if ((int8_ops > 0 && int8_peak_gops <= 0) || (float_ops > 0 && fp32_peak_gflops <= 0)) return 0;
  double seconds = 0;
  if (int8_ops > 0) seconds += int8_ops / (int8_peak_gops * 1e9);
  if (float_ops > 0) seconds += float_ops / (fp32_peak_gflops * 1e9);
  return seconds > 0 ? 1.0 / seconds : 0;
}

Roofline RooflineLimit(double memory_bound_tok_s, double compute_bound_tok_s) {
  if (compute_bound_tok_s < memory_bound_tok_s) return {compute_bound_tok_s, true};
  return {memory_bound_tok_s, false};
}

double PercentOfLimit(double tok_s, double limit_tok_s) {
  return limit_tok_s > 0 ? 100.0 * tok_s / limit_tok_s : 0;
}

}  // namespace swiftlet
