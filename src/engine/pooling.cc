#include "engine/pooling.h"

#include <cmath>
#include <string>

#include "core/str_cat.h"
#include "model/model_config.h"

namespace swiftlet {

const char* PoolingName(Pooling p) {
  switch (p) {
    case Pooling::kMean: return "mean";
    case Pooling::kFirst: return "cls";
    case Pooling::kLast: return "last";
  }
  return "?";
}

absl::StatusOr<Pooling> PoolingFor(const ModelConfig& config) {
  const std::string key = StrCat(ArchitectureName(config.arch), ".pooling_type");
  const int64_t type = config.pooling_type;
  if (type == ModelConfig::kPoolingAbsent) return Pooling::kMean;
  if (type == ModelConfig::kPoolingMalformed) {
    return absl::InvalidArgumentError(StrCat(key, " is not a non-negative integer"));
  }
  switch (type) {
    case 0:
    case 1: return Pooling::kMean;
    case 2: return Pooling::kFirst;
    case 3: return Pooling::kLast;
    default:
      return absl::InvalidArgumentError(StrCat(key, " = ", type, ": this pooling type is not supported"));
  }
}

bool PoolingWants(Pooling pooling, int64_t position, int64_t n) {
  switch (pooling) {
    case Pooling::kMean: return true;
    case Pooling::kFirst: return position == 0;
    case Pooling::kLast: return position == n - 1;
  }
  return false;
}

void PooledSum::Add(const float* row) {
  for (size_t i = 0; i < acc_.size(); ++i) acc_[i] += row[i];
}

std::vector<float> PooledSum::Normalized() const {
  double norm = 0;
  for (double v : acc_) norm += v * v;
  norm = std::sqrt(norm);
  std::vector<float> out(acc_.size());
  for (size_t i = 0; i < acc_.size(); ++i) out[i] = norm > 0 ? static_cast<float>(acc_[i] / norm) : 0.0f;
  return out;
}

std::vector<float> PoolAndNormalize(const float* rows, int64_t n_rows, int64_t width, Pooling pooling) {
  PooledSum sum(width);
  for (int64_t r = 0; r < n_rows; ++r) {
    if (PoolingWants(pooling, r, n_rows)) sum.Add(rows + r * width);
  }
  return sum.Normalized();
}

}  // namespace swiftlet
