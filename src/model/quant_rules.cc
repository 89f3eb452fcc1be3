#include "model/quant_rules.h"

#include <array>
#include <cctype>

#include "core/str_cat.h"

namespace swiftlet {
namespace {

constexpr std::array kTargets = {
    QuantTarget{"F32", TensorType::kF32, false, 0},
    QuantTarget{"F16", TensorType::kF16, false, 1},
    QuantTarget{"BF16", TensorType::kBF16, false, 32},
    QuantTarget{"Q8_0", TensorType::kQ8_0, false, 7},
    QuantTarget{"Q4_0", TensorType::kQ4_0, false, 2},
    QuantTarget{"Q5_0", TensorType::kQ5_0, false, 8},
    QuantTarget{"Q4_K", TensorType::kQ4_K, false, 14},
    QuantTarget{"Q5_K", TensorType::kQ5_K, false, 16},
    QuantTarget{"Q6_K", TensorType::kQ6_K, false, 18},
    QuantTarget{"Q4_K_M", TensorType::kQ4_K, true, 15},
    QuantTarget{"Q5_K_M", TensorType::kQ5_K, true, 17},
};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The layers that get more bits in the K mixes: the first and last eighth,
// where errors hurt most, and every third layer in between.
bool UseMoreBits(int layer, int n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

// A type whose blocks divide the row, trading size for fit.
TensorType FitRow(TensorType type, int64_t row) {
  if (row % InfoOf(type).block_elems == 0) return type;
  if (row % BlockElems(TensorType::kQ8_0) == 0) return TensorType::kQ8_0;
  return TensorType::kF16;
}

}  // namespace

absl::StatusOr<QuantTarget> ParseQuantTarget(std::string_view name) {
  std::string upper(name);
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  for (const QuantTarget& t : kTargets) {
    if (t.name == upper) return t;
  }
  return absl::InvalidArgumentError(
      StrCat("unknown quantization type '", name, "' (choose one of ", QuantTargetNames(), ")"));
}

std::string_view QuantTargetNames() {
  return "F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K, Q4_K_M, Q5_K_M";
}

int LayerOfTensor(std::string_view name) {
  if (name.substr(0, 4) != "blk.") return -1;
  int layer = 0;
  size_t i = 4;
  if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) {
    layer = layer * 10 + (name[i] - '0');
    if (layer > 1 << 20) return -1;
  }
  return (i < name.size() && name[i] == '.') ? layer : -1;
}

TensorType ChooseTensorType(const QuantTarget& target, const TensorSlot& slot, bool tied_head) {
  if (slot.shape.size() < 2) return TensorType::kF32;
  const bool is_head = slot.name == "output.weight" || (tied_head && slot.name == "token_embd.weight");
  TensorType type = target.base;
  if (target.k_mix) {
    const int layer = LayerOfTensor(slot.name);
    const bool sensitive = EndsWith(slot.name, "attn_v.weight") || EndsWith(slot.name, "ffn_down.weight");
    if (is_head || (sensitive && layer >= 0 && UseMoreBits(layer, slot.n_layer))) {
      type = TensorType::kQ6_K;
    }
  } else if (target.base == TensorType::kQ4_0 && is_head) {
    type = TensorType::kQ6_K;
  }
  return FitRow(type, slot.shape[0]);
}

}  // namespace swiftlet
