#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "model/logit_math.h"

namespace swiftlet {

namespace {

// The `k` largest non-NaN logits, largest first and ties in order of id, by
// one pass that keeps them sorted: once k are kept, a logit enters only
// when it beats the k-th so far (strictly, so an equal one after it keeps
// its lower id out), which after the first few thousand ids is rare, so
// the pass is a SIMD search for the next such logit (NextAbove: never a
// NaN); k is at most a few tens.
std::vector<TokenLogprob> TopIds(std::span<const float> logits, size_t k) {
  std::vector<TokenLogprob> top;
  if (k == 0) return top;
  top.reserve(k + 1);
  auto keep = [&](size_t i) {
    const float v = logits[i];
    // After every kept value at least as large: equal values keep id order.
    auto at = std::upper_bound(top.begin(), top.end(), v,
                               [](float x, const TokenLogprob& t) { return x > t.logprob; });
    top.insert(at, {static_cast<int32_t>(i), v});
    if (top.size() > k) top.pop_back();
  };
  size_t i = 0;
  for (; i < logits.size() && top.size() < k; ++i) {
    if (!std::isnan(logits[i])) keep(i);
  }
  if (top.size() < k) return top;  // Fewer non-NaN logits than k.
  const auto n = static_cast<int64_t>(logits.size());
  for (int64_t j = NextAbove(logits.data(), static_cast<int64_t>(i), n, top.back().logprob); j < n;
       j = NextAbove(logits.data(), j + 1, n, top.back().logprob)) {
    keep(static_cast<size_t>(j));
  }
  return top;
}

}  // namespace

TokenLogprobs ComputeLogprobs(std::span<const float> logits, int32_t chosen, int32_t top,
                              std::vector<float>& scratch) {
  SWIFTLET_CHECK(!logits.empty() && chosen >= 0 && static_cast<size_t>(chosen) < logits.size() && top >= 0);
  const auto n = static_cast<int64_t>(logits.size());
  scratch.assign(logits.begin(), logits.end());
  // e^(x - max) in place (0 for NaN), then their sum: where max is finite
  // (otherwise the row is left as it was, and log Z is not needed).
  const float max = ExpOfLogitsInPlace(scratch.data(), n, 1.0f);
  // log Z = max + log(sum); every logprob is x - log Z, in double so that
  // a logit far below the max keeps its digits. A broken model's rows: with
  // a +inf logit the +inf ids share all the mass; with none above -inf no
  // id has any; a NaN logit has none either way.
  const double log_z = std::isfinite(max) ? static_cast<double>(max) + std::log(SumOfWeights(scratch.data(), n)) : 0.0;
  double inf_logprob = -INFINITY;  // An id at +inf, when the max is +inf.
  if (max == INFINITY) {
    const auto at_inf = std::count(logits.begin(), logits.end(), INFINITY);
    inf_logprob = -std::log(static_cast<double>(at_inf));
  }
  auto logprob = [&](float x) -> float {
    if (std::isnan(x) || max == -INFINITY) return -INFINITY;
    if (max == INFINITY) return static_cast<float>(x == INFINITY ? inf_logprob : -INFINITY);
    return static_cast<float>(static_cast<double>(x) - log_z);
  };
  TokenLogprobs out;
  out.chosen = {chosen, logprob(logits[static_cast<size_t>(chosen)])};
  out.top = TopIds(logits, static_cast<size_t>(top));
  for (TokenLogprob& t : out.top) t.logprob = logprob(t.logprob);
  return out;
}

}  // namespace swiftlet
