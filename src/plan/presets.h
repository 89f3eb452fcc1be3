// Model shapes a plan can be made for without a file: the shapes of real
// open models (layers, widths, heads, vocabulary, context), by size
// ("7b") or by name ("qwen2.5-7b"), weights in any format
// SizeModelShape takes. Only the shape matters for planning: two models of
// the same shape cost the same.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "perf/model_shape.h"

namespace swiftlet::plan {

struct ModelPreset {
  std::string_view name;   // "qwen2.5-7b"
  std::string_view alias;  // "7b"; empty when none.
  std::string_view about;  // Which model's shape it is.
  ModelShape shape;
};

const std::vector<ModelPreset>& ModelPresets();

// By name or alias, case-insensitive; InvalidArgument lists the choices.
absl::StatusOr<ModelPreset> FindModelPreset(std::string_view name);

// "0.5b (qwen2.5-0.5b), ..., tinyllama-1.1b, smollm2-135m"
std::string ModelPresetNames();

}  // namespace swiftlet::plan
