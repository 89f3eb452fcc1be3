#include "probe/sample_stats.h"

#include <algorithm>
#include <cmath>

namespace swiftlet::probe {

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

Summary Summarize(const Samples& samples) {
  Summary s;
  const std::vector<double>& v = samples.values_ms;
  s.n = v.size();
  s.attempts = samples.attempts;
  s.loss_pct = samples.attempts > 0
                   ? 100.0 * static_cast<double>(samples.attempts - static_cast<int>(v.size())) / samples.attempts
                   : 0;
  if (v.empty()) return s;
  s.p50 = Percentile(v, 50);
  s.p95 = Percentile(v, 95);
  s.p99 = Percentile(v, 99);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  if (v.size() >= 3) {
    std::vector<double> d;
    for (size_t i = 1; i < v.size(); ++i) d.push_back(v[i] - v[i - 1]);
    double mean = 0;
    for (double x : d) mean += x;
    mean /= static_cast<double>(d.size());
    double sq = 0;
    for (double x : d) sq += (x - mean) * (x - mean);
    s.jitter = std::sqrt(sq / static_cast<double>(d.size() - 1));
  }
  return s;
}

}  // namespace swiftlet::probe
