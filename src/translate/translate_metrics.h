// What the translation service records and the server exports on /metrics
// (names in server/prometheus_text.cc). Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "engine/metrics.h"

namespace swiftlet::translate {

class TranslateMetrics {
 public:
  TranslateMetrics();

  // Request received .. this language's translation finished, per target
  // language (codes come from the language table, so the label set is
  // bounded).
  void ObserveLanguageLatency(const std::string& language, double seconds);
  std::vector<std::pair<std::string, HistogramSnapshot>> LanguageLatencies() const;

  Counter translations_total;       // Items answered (computed or cached).
  Counter translations_cached_total;  // Of those, from the translation cache.
  Counter glossary_failures_total;  // Items whose placeholders or fixed terms did not survive.
  Counter dropped_late_total;       // Stream items dropped: past their budget.
  Counter dropped_overflow_total;   // Stream comments dropped: the stream's queue was full.
  Counter stream_comments_total;    // Comments received on live streams.
  Gauge streams_active;
  // A stream's queued comments, observed at each arrival.
  Histogram stream_queue_depth;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Histogram>> latency_ ABSL_GUARDED_BY(mu_);
};

}  // namespace swiftlet::translate
