// Parsing of human durations and latency-target lists from flags and
// config: "500ms", "2s", "1.5s", "250us", "1m30s"; "ttft=500ms,tpot=100ms".
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace swiftlet {

// Nanoseconds of a duration as absl::ParseDuration reads it (decimal numbers
// each with a unit: ns, us, ms, s, m, h; "1m30s", "1.5s"), from 1ns to 24h;
// InvalidArgument naming the text otherwise (also for "inf" and negatives).
absl::StatusOr<int64_t> ParseDuration(std::string_view text);

// "key=duration,key=duration"; keys must be in `allowed`, each at most once.
absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> ParseDurationList(
    std::string_view text, const std::vector<std::string_view>& allowed);

}  // namespace swiftlet
