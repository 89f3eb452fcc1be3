// swiftlet tools make-model: writes a model with seeded random weights.
#include <cstdio>

#include "cli/commands.h"
#include "cli/format.h"
#include "core/parallel_for.h"
#include "core/str_cat.h"
#include "model/random_model.h"

namespace swiftlet::cli {

int RunMakeModel(const MakeModelOptions& o) {
  auto preset = RandomModelPreset(o.preset);
  if (!preset.ok()) return ReportError(preset.status());
  RandomModelSpec spec = *preset;
  if (o.arch) {
    auto arch = ArchitectureFromName(*o.arch);
    if (!arch.ok()) return ReportError(StrCat("--arch: ", arch.status().message()));
    spec.arch = *arch;
  }
  if (o.hidden) spec.n_embd = *o.hidden;
  if (o.layers) spec.n_layer = *o.layers;
  if (o.heads) spec.n_head = *o.heads;
  if (o.kv_heads) spec.n_head_kv = *o.kv_heads;
  if (o.head_dim) spec.head_dim = *o.head_dim;
  if (o.ffn) spec.n_ff = *o.ffn;
  if (o.context) spec.n_ctx = *o.context;
  if (o.rope_base) spec.rope_freq_base = *o.rope_base;
  if (o.tied) spec.tied_embeddings = true;
  spec.vocab_path = o.vocab_path;
  spec.seed = o.seed;
  auto target = ParseQuantTarget(o.type);
  if (!target.ok()) return ReportError(StrCat("--type: ", target.status().message()));
  spec.weights = *target;

  const int threads = o.threads > 0 ? o.threads : DefaultThreads();
  int last_decile = -1;
  auto progress = [&](uint64_t done, uint64_t total) {
    if (total < (uint64_t{64} << 20)) return;  // Small models finish at once.
    const int decile = total ? static_cast<int>(10 * done / total) : 10;
    if (decile != last_decile) std::fprintf(stderr, "make-model: %d%%\n", decile * 10);
    last_decile = decile;
  };
  if (absl::Status s = WriteRandomModel(spec, o.out_path, threads, progress); !s.ok()) {
    return ReportError(s);
  }
  std::fprintf(stderr, "make-model: wrote %s\n", o.out_path.c_str());
  return 0;
}

}  // namespace swiftlet::cli
