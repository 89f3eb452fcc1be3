// `swiftlet bench --url`: a sweep of load points against an OpenAI-compatible
// server, each run open loop (--rate) or closed loop (--concurrency), with a
// text report per point on stdout, a table of the sweep, progress on a
// terminal's stderr, and optional JSON and HTML reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace swiftlet::loadgen {

// The flags of `swiftlet bench`, as given: strings are parsed here so every
// error names its flag.
struct SweepOptions {
  std::string url;                    // http:// or https://
  std::string ca_file;                // https: the CA to trust; empty: the system's.
  std::string model;                  // Empty: the server's first /v1/models entry.
  std::vector<double> rates;          // Open loop, a sweep when several.
  std::vector<int64_t> concurrencies; // Closed loop, a sweep when several.
  int64_t requests = 0;               // Per point.
  std::string duration;               // Per point, "30s".
  int64_t warmup = -1;                // Requests; -1: 10% of the point, at most 20.
  double burstiness = 1;
  std::string prompt_tokens = "40";   // Words: "40" or "20-60".
  std::string output_tokens = "32";
  std::string workload = "synthetic";
  int64_t streams = 1;
  int languages = 3;
  int64_t shared_prefix_words = 0;    // synthetic: words shared by every prompt.
  // live-comments measured per comment (loadgen/comment_load.h).
  std::string transport;              // Empty: per request, as K chat completions.
  std::vector<double> comment_rates;  // Per stream.
  std::string budget = "800ms";
  std::string api_key;                // Sent as a Bearer token.
  std::string slo = "ttft=500ms,tpot=100ms";
  std::string timeout = "120s";       // Per request, and the drain wait of a point.
  uint64_t seed = 1;
  std::string json_path;
  std::string html_path;
  std::string client_machine;         // What the reports name as the client.
};

// Runs every point in order. InvalidArgument naming the flag for bad
// options (before any request is sent); Unavailable when the server cannot
// be asked for its model; DataLoss when a report cannot be written.
absl::Status RunSweep(const SweepOptions& options);

}  // namespace swiftlet::loadgen
