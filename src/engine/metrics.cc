#include "engine/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/str_cat.h"

namespace swiftlet {
namespace {

template <typename Enum, size_t N>
std::array<std::string, N> EnumLabels(const char* (*name)(Enum), bool skip_first) {
  std::array<std::string, N> labels;
  for (size_t i = skip_first ? 1 : 0; i < N; ++i) labels[i] = name(static_cast<Enum>(i));
  return labels;
}

bool IsMetricNamePrefix(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// HELP text escapes only backslash and newline.
std::string EscapeHelp(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

class Writer {
 public:
  explicit Writer(std::string_view prefix) : prefix_(prefix) {}

  void Header(std::string_view name, std::string_view type, std::string_view help) {
    StrAppend("# HELP ", prefix_, name, " ", EscapeHelp(help), "\n");
    StrAppend("# TYPE ", prefix_, name, " ", type, "\n");
  }

  void AddHistogram(std::string_view name, const Histogram& h, std::string_view help) {
    const HistogramSnapshot s = h.Snapshot();
    Header(name, "histogram", help);
    for (size_t i = 0; i <= s.bounds.size(); ++i) {
      const std::string le =
          i < s.bounds.size() ? FormatPrometheusValue(s.bounds[i]) : std::string("+Inf");
      StrAppend(prefix_, name, "_bucket{le=\"", le, "\"} ", s.cumulative[i], "\n");
    }
    StrAppend(prefix_, name, "_sum ", FormatPrometheusValue(s.sum), "\n");
    StrAppend(prefix_, name, "_count ", s.count, "\n");
  }

  void AddGauge(std::string_view name, const Gauge& g, std::string_view help) {
    Header(name, "gauge", help);
    StrAppend(prefix_, name, " ", g.Value(), "\n");
  }

  void AddCounter(std::string_view field, const Counter& c, std::string_view help) {
    const std::string name = CounterName(field);
    Header(name, "counter", help);
    StrAppend(prefix_, name, " ", c.Value(), "\n");
  }

  template <typename Enum, size_t N>
  void AddCounterVec(std::string_view field, const CounterVec<Enum, N>& v, std::string_view help) {
    const std::string name = CounterName(field);
    Header(name, "counter", help);
    for (size_t i = 0; i < N; ++i) {
      if (v.label_value(i).empty()) continue;
      StrAppend(prefix_, name, "{", v.label_name(), "=\"", EscapePrometheusLabel(v.label_value(i)),
                "\"} ", v.value_at(i), "\n");
    }
  }

  std::string Take() { return std::move(out_); }

 private:
  static std::string CounterName(std::string_view field) {
    constexpr std::string_view kTotal = "_total";
    if (field.size() >= kTotal.size() && field.substr(field.size() - kTotal.size()) == kTotal) {
      return std::string(field);
    }
    return StrCat(field, kTotal);
  }

  template <typename... Args>
  void StrAppend(const Args&... args) {
    out_ += StrCat(args...);
  }

  std::string_view prefix_;
  std::string out_;
};

}  // namespace

double HistogramSnapshot::Quantile(double q) const {
  SWIFTLET_CHECK(q >= 0 && q <= 1);
  SWIFTLET_CHECK(cumulative.size() == bounds.size() + 1);
  if (count == 0) return std::numeric_limits<double>::quiet_NaN();
  const double rank = q * static_cast<double>(count);
  // The first bucket that reaches the rank and is not empty (rank 0 would
  // otherwise pick a leading empty bucket).
  size_t b = 0;
  while (b < bounds.size() &&
         (static_cast<double>(cumulative[b]) < rank || cumulative[b] == 0)) {
    ++b;
  }
  if (b == bounds.size()) return bounds.back();
  if (b == 0 && bounds[0] <= 0) return bounds[0];
  const double lower = b == 0 ? 0.0 : bounds[b - 1];
  const uint64_t before = b == 0 ? 0 : cumulative[b - 1];
  const double in_bucket = static_cast<double>(cumulative[b] - before);  // > 0, see above.
  return lower + (bounds[b] - lower) * (rank - static_cast<double>(before)) / in_bucket;
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  SWIFTLET_CHECK(!bounds_.empty());
  for (size_t i = 0; i < bounds_.size(); ++i) {
    SWIFTLET_CHECK(std::isfinite(bounds_[i]));
    if (i > 0) SWIFTLET_CHECK(bounds_[i - 1] < bounds_[i]);
  }
  counts_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  // lower_bound: the first bound >= v, i.e. v <= bound. NaN compares false
  // with everything, so it is sent to +Inf explicitly.
  const size_t i = std::isnan(v) ? bounds_.size()
                                 : static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                                       bounds_.begin());
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot s;
  s.bounds = bounds_;
  s.cumulative.resize(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = total;
  }
  s.count = total;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::vector<double> LatencyBucketsSeconds() {
  return {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
          0.75,  1,    1.5,   2,    2.5,   5,   10,   20,  30,  60};
}

std::vector<double> TokenLatencyBucketsSeconds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075,
          0.1,   0.15,   0.2,   0.3,  0.5,   0.75, 1,    2.5,  5};
}

EngineMetrics::EngineMetrics()
    : time_to_first_token_seconds(LatencyBucketsSeconds()),
      inter_token_latency_seconds(TokenLatencyBucketsSeconds()),
      time_per_output_token_seconds(TokenLatencyBucketsSeconds()),
      e2e_request_latency_seconds(LatencyBucketsSeconds()),
      queue_time_seconds(LatencyBucketsSeconds()),
      requests_finished("reason",
                        EnumLabels<FinishReason, kFinishReasonCount>(FinishReasonName, false)),
      refusals("reason", EnumLabels<RefusalReason, kRefusalReasonCount>(RefusalReasonName, true)) {}

std::string FormatPrometheusValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return StrCat(v);
}

std::string EscapePrometheusLabel(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string FormatPrometheus(const EngineMetrics& m, std::string_view prefix) {
  SWIFTLET_CHECK(IsMetricNamePrefix(prefix));
  Writer w(prefix);
  w.AddHistogram("time_to_first_token_seconds", m.time_to_first_token_seconds,
              "Time from request received to its first token event, in seconds.");
  w.AddHistogram("inter_token_latency_seconds", m.inter_token_latency_seconds,
              "Time between consecutive token events of a request, in seconds.");
  w.AddHistogram("time_per_output_token_seconds", m.time_per_output_token_seconds,
              "Per request: (last token - first token) / (output tokens - 1), in seconds.");
  w.AddHistogram("e2e_request_latency_seconds", m.e2e_request_latency_seconds,
              "Time from request received to finished, in seconds.");
  w.AddHistogram("queue_time_seconds", m.queue_time_seconds,
              "Time from request received to its first prefill chunk, in seconds.");
  w.AddGauge("requests_running", m.requests_running, "Requests prefilling or decoding.");
  w.AddGauge("requests_waiting", m.requests_waiting, "Requests accepted and waiting to start.");
  w.AddGauge("kv_blocks_used", m.kv_blocks_used, "KV cache blocks in use.");
  w.AddGauge("kv_blocks_capacity", m.kv_blocks_total, "KV cache blocks in all.");
  w.AddCounter("prefix_cache_queries_tokens", m.prefix_cache_queries_tokens,
            "Prompt tokens looked up in the prefix cache.");
  w.AddCounter("prefix_cache_hits_tokens", m.prefix_cache_hits_tokens,
            "Prompt tokens found in the prefix cache.");
  w.AddCounter("prompt_tokens_total", m.prompt_tokens_total, "Prompt tokens of accepted requests.");
  w.AddCounter("generation_tokens_total", m.generation_tokens_total, "Output tokens generated.");
  w.AddCounterVec("requests_finished", m.requests_finished, "Requests finished, by finish reason.");
  w.AddCounterVec("refusals", m.refusals, "Requests refused at submission, by reason.");
  w.AddCounter("preemptions_total", m.preemptions_total,
            "Running requests preempted for KV cache space.");
  return w.Take();
}

}  // namespace swiftlet
