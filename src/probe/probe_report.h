// swiftlet probe's output: a table per target (text) or one JSON document
// (--json), with the sizing rule beside the throughput. Plain functions.
#pragma once

#include <string>
#include <vector>

#include "probe/probe_runner.h"

namespace swiftlet::probe {

std::string FormatText(const std::vector<TargetResult>& results, const ProbeOptions& options);
std::string FormatJson(const std::vector<TargetResult>& results, const ProbeOptions& options);

}  // namespace swiftlet::probe
