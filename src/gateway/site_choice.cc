#include "gateway/site_choice.h"

namespace swiftlet::gateway {

size_t ChooseSite(std::span<const ScoredSite> sites, uint64_t random, double tolerance) {
  size_t best = 0;
  for (size_t i = 1; i < sites.size(); ++i) {
    if (sites[i].score_ms < sites[best].score_ms) best = i;
  }
  // Scores are milliseconds of at least a round trip; the small absolute
  // slack keeps sub-millisecond noise on localhost from splitting hairs.
  const double limit = sites[best].score_ms * (1 + tolerance) + 1e-3;
  size_t near[64];
  size_t n = 0;
  for (size_t i = 0; i < sites.size() && n < 64; ++i) {
    if (sites[i].score_ms <= limit) near[n++] = i;
  }
  if (n < 2) return best;
  const size_t a = near[random % n];
  const size_t b = near[(random % n + 1 + (random / n) % (n - 1)) % n];
  return sites[b].score_ms < sites[a].score_ms ? b : a;
}

bool KeepsAffinity(double score_ms, double best_ms, double factor) {
  return score_ms <= best_ms * factor + 1e-3;
}

}  // namespace swiftlet::gateway
