// Summaries of one metric's samples, as the probe reports them:
// percentiles, jitter and loss. Plain functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace swiftlet::probe {

// The attempts at one measurement: successful values in the order taken,
// and how many attempts there were in all.
struct Samples {
  std::vector<double> values_ms;
  int attempts = 0;
  std::string last_error;  // Of the last failed attempt; empty if none failed.

  void Add(double ms) {
    ++attempts;
    values_ms.push_back(ms);
  }
  void Fail(std::string error) {
    ++attempts;
    last_error = std::move(error);
  }
};

struct Summary {
  size_t n = 0;  // Successful samples.
  int attempts = 0;
  double p50 = 0, p95 = 0, p99 = 0, mean = 0, min = 0, max = 0;
  // Standard deviation (n-1) of the differences between consecutive
  // samples: how much one measurement moves from the next (RFC 3550's
  // intent), 0 with fewer than three samples.
  double jitter = 0;
  double loss_pct = 0;  // Failed or timed-out attempts, % of attempts.
};

// Percentile `p` (0..100) of `values` with linear interpolation between
// the closest ranks (numpy's default); 0 for no values.
double Percentile(std::vector<double> values, double p);

Summary Summarize(const Samples& samples);

}  // namespace swiftlet::probe
