#include "translate/translate_metrics.h"

namespace swiftlet::translate {

TranslateMetrics::TranslateMetrics() : stream_queue_depth({0, 1, 2, 4, 8, 16, 32, 64}) {}

void TranslateMetrics::ObserveLanguageLatency(const std::string& language, double seconds) {
  Histogram* h = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = latency_[language];
    if (slot == nullptr) slot = std::make_unique<Histogram>(LatencyBucketsSeconds());
    h = slot.get();
  }
  h->Observe(seconds);
}

std::vector<std::pair<std::string, HistogramSnapshot>> TranslateMetrics::LanguageLatencies() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, HistogramSnapshot>> out;
  for (const auto& [language, h] : latency_) out.emplace_back(language, h->Snapshot());
  return out;
}

}  // namespace swiftlet::translate
