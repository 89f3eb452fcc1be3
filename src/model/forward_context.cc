#include "model/forward_context.h"

#include "core/check.h"
#include "core/thread_pool.h"
#include "model/forward_state.h"

namespace swiftlet {

ForwardContext::ForwardContext(int threads) : state_(std::make_unique<State>()) {
  SWIFTLET_CHECK(threads >= 1);
  state_->threads = threads;
  state_->backend = MakeCpuBackend(threads);
}

ForwardContext::~ForwardContext() = default;
ForwardContext::ForwardContext(ForwardContext&&) noexcept = default;
ForwardContext& ForwardContext::operator=(ForwardContext&&) noexcept = default;

ForwardContext::ForwardContext(ComputePool& shared_pool) : state_(std::make_unique<State>()) {
  state_->threads = shared_pool.threads();
  state_->backend = MakeCpuBackend(shared_pool);
}

int ForwardContext::threads() const { return state_->threads; }

Backend& ForwardContext::backend() { return *state_->backend; }

}  // namespace swiftlet
