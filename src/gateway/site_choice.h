// The choice rule, as pure functions over scores (gateway/site_table.h
// gathers the scores; tests call these directly).
//
// A site's score is its expected time to first token in milliseconds
// (gateway/site_health.h: RTT + published wait + in-flight penalty). The
// lowest wins, except that sites within `tolerance` (10%) of the best are
// treated as equals: of those, two distinct ones are drawn at random and
// the lower score of the two wins (power of two choices). Scores carry the
// in-flight penalty, which moves with every request sent, so near-equal
// sites take turns as each fills up, rather than the best taking
// everything until its next poll; the worst of three or more near-equals
// never wins a draw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace swiftlet::gateway {

struct ScoredSite {
  size_t index = 0;  // The caller's handle for the site.
  double score_ms = 0;
};

inline constexpr double kNearBestTolerance = 0.10;
inline constexpr double kAffinityFactor = 2.0;

// The position in `sites` (non-empty) of the chosen one. `random` is any
// uniformly random 64-bit value; the same value gives the same choice.
size_t ChooseSite(std::span<const ScoredSite> sites, uint64_t random,
                  double tolerance = kNearBestTolerance);

// Whether a stream pinned to a site with `score_ms` stays there, the best
// eligible site scoring `best_ms`: while within `factor` times the best.
bool KeepsAffinity(double score_ms, double best_ms, double factor = kAffinityFactor);

}  // namespace swiftlet::gateway
