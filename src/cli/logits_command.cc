// swiftlet tools logits: the logits at every position of one token sequence,
// written as raw little-endian float32 [n_tokens, n_vocab]. Tests compare
// them with an independent reference implementation.
#include <cstdio>
#include <sstream>

#include "cli/commands.h"
#include "core/str_cat.h"
#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace swiftlet::cli {

absl::StatusOr<std::vector<int32_t>> ParseTokenIds(const std::string& text) {
  std::vector<int32_t> ids;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    char* end = nullptr;
    const long v = std::strtol(word.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > INT32_MAX) {
      return absl::InvalidArgumentError(StrCat("--tokens: '", word, "' is not a token id"));
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) return absl::InvalidArgumentError("--tokens: no token ids given");
  return ids;
}

absl::StatusOr<TensorType> ParseKvType(const std::string& name) {
  if (name == "f16") return TensorType::kF16;
  if (name == "f32") return TensorType::kF32;
  if (name == "q8_0") return TensorType::kQ8_0;
  return absl::InvalidArgumentError(StrCat("--kv-type: '", name, "' is not f16, f32 or q8_0"));
}

int RunLogits(const LogitsOptions& o) {
  auto ids = ParseTokenIds(o.tokens);
  if (!ids.ok()) return ReportError(ids.status());
  auto kv_type = ParseKvType(o.kv_type);
  if (!kv_type.ok()) return ReportError(kv_type.status());
  auto model = Model::Load(o.model_path);
  if (!model.ok()) return ReportError(model.status());
  const ModelConfig& c = (*model)->config();
  const int64_t n = static_cast<int64_t>(ids->size());
  if (n > c.n_ctx_train) {
    return ReportError(StrCat("--tokens: ", n, " tokens exceed the context of ", c.n_ctx_train));
  }
  auto cache = KvCache::Create({c.n_layer, c.kv_dim(), 1, n, *kv_type}, uint64_t{8} << 30);
  if (!cache.ok()) return ReportError(cache.status());
  auto backend = MakeCpuBackend(o.threads > 0 ? o.threads : PhysicalCores());
  ForwardContext ctx;
  std::vector<float> all;
  all.reserve(static_cast<size_t>(n * c.n_vocab));
  const int64_t chunk = o.chunk > 0 ? o.chunk : n;
  for (int64_t start = 0; start < n; start += chunk) {
    Batch batch;
    for (int64_t t = start; t < std::min(n, start + chunk); ++t) {
      batch.Add((*ids)[t], static_cast<int32_t>(t), 0, true);
    }
    ForwardOutput out;
    if (absl::Status s = (*model)->Forward(batch, *cache, *backend, ctx, out); !s.ok()) {
      return ReportError(s);
    }
    all.insert(all.end(), out.values.begin(), out.values.end());
  }
  std::FILE* f = std::fopen(o.out_path.c_str(), "wb");
  if (f == nullptr) return ReportError(StrCat(o.out_path, ": cannot create"));
  const bool ok = std::fwrite(all.data(), sizeof(float), all.size(), f) == all.size();
  if (std::fclose(f) != 0 || !ok) return ReportError(StrCat(o.out_path, ": write failed"));
  return 0;
}

}  // namespace swiftlet::cli
