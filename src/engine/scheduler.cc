#include "engine/scheduler.h"

#include <algorithm>
#include <numeric>

namespace swiftlet {

int64_t StepBudget(int64_t step_tokens, int64_t tightest_tpot_ns, OutputRows decodes,
                   const StepCostModel& cost) {
  int64_t budget = step_tokens;
  if (tightest_tpot_ns > 0 && cost.per_token_ns > 0) {
    const double target = kStepTimeHeadroom * static_cast<double>(tightest_tpot_ns);
    // Every decode yields an output row; prefill chunks rarely do.
    const double room = (target - cost.fixed_ns - cost.AroundNs(decodes)) / cost.per_token_ns;
    budget = std::min<int64_t>(budget, static_cast<int64_t>(std::max(0.0, room)));
  }
  return std::max(budget, decodes.total());
}

StepPlan PlanStep(const std::vector<SequenceDemand>& demands, const SchedulerConfig& config,
                  const StepCostModel& cost, const FeedFn& feed) {
  StepPlan plan;
  plan.tokens.assign(demands.size(), 0);
  OutputRows decodes;
  int64_t tightest_tpot = 0;
  for (size_t i = 0; i < demands.size(); ++i) {
    if (!demands[i].decoding) continue;
    plan.tokens[i] = 1;
    decodes.Add(demands[i].argmax);
    const int64_t t = demands[i].tpot_target_ns;
    if (t > 0 && (tightest_tpot == 0 || t < tightest_tpot)) tightest_tpot = t;
  }
  const int64_t budget = StepBudget(config.step_tokens, tightest_tpot, decodes, cost);
  plan.budget = budget;
  int64_t left = budget - decodes.total();

  std::vector<size_t> order;
  for (size_t i = 0; i < demands.size(); ++i) {
    if (!demands[i].decoding && demands[i].pending_tokens > 0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const SequenceDemand& x = demands[a];
    const SequenceDemand& y = demands[b];
    if (x.latency_class != y.latency_class) return LatencyClassRank(x.latency_class) < LatencyClassRank(y.latency_class);
    if (x.ttft_deadline_ns != y.ttft_deadline_ns) return x.ttft_deadline_ns < y.ttft_deadline_ns;
    return x.arrival_order < y.arrival_order;
  });
  for (size_t i : order) {
    if (left <= 0) break;
    int64_t n = std::min({demands[i].pending_tokens, config.chunk_tokens, left});
    if (feed) n = std::clamp<int64_t>(feed(i, n), 0, n);
    plan.tokens[i] = n;
    left -= n;
  }
  plan.total = std::accumulate(plan.tokens.begin(), plan.tokens.end(), int64_t{0});
  return plan;
}

}  // namespace swiftlet
