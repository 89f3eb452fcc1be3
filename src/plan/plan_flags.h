// The list-valued flags of `swiftlet plan`, parsed and bounded here so that
// every error names its flag: --slo, --sites, --redundancy, --link-mbps and
// --efficiency.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "plan/capacity.h"

namespace swiftlet::plan {

inline constexpr int kMaxSites = 64;
inline constexpr size_t kMaxSiteNameBytes = 32;
inline constexpr int64_t kMaxSpares = 1000;
inline constexpr double kMaxLinkMbps = 1e7;  // 10 Tbit/s.

// "ttft=500ms,tpot=100ms[,e2e=5s]": each key at most once, durations as
// core/duration.h reads them.
absl::StatusOr<SloSeconds> ParseSlo(std::string_view text);

struct Site {
  std::string name;
  double share = 1;  // Of the peak load.
};

// "hk:0.5,sg:0.3,fra:0.2": names of letters, digits, '-' and '_', each
// once; shares in (0, 1] that sum to 1 (within 0.001). Empty text: one site
// "all" with the whole load.
absl::StatusOr<std::vector<Site>> ParseSites(std::string_view text);

// "n" (none), "n+K" (K spare replicas per site), "2n" (twice the replicas).
absl::StatusOr<Redundancy> ParseRedundancy(std::string_view text);

// One figure for every site ("1000"), or one per site ("hk:1000,sg:500",
// every site named once). Mbps in (0, 1e7]. Result in `sites` order.
absl::StatusOr<std::vector<double>> ParseLinkMbps(std::string_view text,
                                                  const std::vector<Site>& sites);

// Efficiency factors given by hand, "decode=0.6,prefill=0.5,serving=0.9"
// (any subset), each in (0, 1.5]: decode applies at every batch size.
struct EfficiencyOverrides {
  std::optional<double> decode;
  std::optional<double> prefill;
  std::optional<double> serving;
};
absl::StatusOr<EfficiencyOverrides> ParseEfficiency(std::string_view text);

}  // namespace swiftlet::plan
