#include "model/model_runner.h"

#include <utility>

#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/forward_context.h"
#include "model/model.h"

namespace swiftlet {

struct ModelRunner::Parts {
  std::unique_ptr<ComputePool> pool;  // Outlives the context, which may run on it.
  KvCache cache;
  ForwardContext context;
};

ModelRunner::ModelRunner(const Model& model, const ModelRunnerOptions& options,
                         std::unique_ptr<Parts> parts)
    : model_(model), options_(options), parts_(std::move(parts)) {}

ModelRunner::~ModelRunner() = default;

absl::StatusOr<std::unique_ptr<ModelRunner>> ModelRunner::Create(const Model& model,
                                                                 const ModelRunnerOptions& o) {
  if (o.slots < 1 || o.positions < 1) {
    return absl::InvalidArgumentError("a model runner needs at least one slot and one position");
  }
  if (o.threads < 1) return absl::InvalidArgumentError("threads: must be at least 1");
  const ModelConfig& c = model.config();
  // The context computes where the model's weights are; its cache is made
  // in that backend's memory.
  // One pool of host threads: the CPU forward's, and the host work's
  // between forwards (host_pool), never two sets spinning at once.
  auto pool = std::make_unique<ComputePool>(o.threads);
  SWIFTLET_ASSIGN_OR_RETURN(ForwardContext context, model.device().is_cuda()
                                                        ? ForwardContext::Create(model.device(), o.threads)
                                                        : ForwardContext(*pool));
  SWIFTLET_ASSIGN_OR_RETURN(KvCache cache, KvCache::Create({c.n_layer, c.kv_dim(), o.slots, o.positions, o.kv_type},
                                                           o.max_kv_bytes, &context.backend()));
  auto parts = std::unique_ptr<Parts>(new Parts{std::move(pool), std::move(cache), std::move(context)});
  return std::unique_ptr<ModelRunner>(new ModelRunner(model, o, std::move(parts)));
}

ComputePool& ModelRunner::host_pool() { return *parts_->pool; }

absl::Status ModelRunner::Forward(const Batch& batch, ForwardOutput& out) {
  return model_.Forward(batch, parts_->cache, parts_->context, out);
}

}  // namespace swiftlet
