#include "server/prometheus_text.h"

#include <cmath>

#include "core/check.h"
#include "core/str_cat.h"

namespace swiftlet::server {
namespace {

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

  // Labels put before each sample's own (`model="x"`), or none.
  void SetLabel(std::string label) { label_ = std::move(label); }

  void HistogramLines(std::string_view name, const Histogram& h) {
    const HistogramSnapshot s = h.Snapshot();
    const std::string lead = label_.empty() ? std::string() : StrCat(label_, ",");
    for (size_t i = 0; i <= s.bounds.size(); ++i) {
      const std::string le =
          i < s.bounds.size() ? FormatPrometheusValue(s.bounds[i]) : std::string("+Inf");
      StrAppend(prefix_, name, "_bucket{", lead, "le=\"", le, "\"} ", s.cumulative[i], "\n");
    }
    StrAppend(prefix_, name, "_sum", Braced(), " ", FormatPrometheusValue(s.sum), "\n");
    StrAppend(prefix_, name, "_count", Braced(), " ", s.count, "\n");
  }

  void GaugeLine(std::string_view name, const Gauge& g) { StrAppend(prefix_, name, Braced(), " ", g.Value(), "\n"); }
  void CounterLine(std::string_view name, const Counter& c) { StrAppend(prefix_, name, Braced(), " ", c.Value(), "\n"); }

  template <typename Enum, size_t N>
  void CounterVecLines(std::string_view name, const CounterVec<Enum, N>& v) {
    const std::string lead = label_.empty() ? std::string() : StrCat(label_, ",");
    for (size_t i = 0; i < N; ++i) {
      if (v.label_value(i).empty()) continue;
      StrAppend(prefix_, name, "{", lead, v.label_name(), "=\"", EscapePrometheusLabel(v.label_value(i)),
                "\"} ", v.value_at(i), "\n");
    }
  }

  // One histogram per label value, as one family.
  void AddHistogramFamily(std::string_view name, std::string_view label,
                          const std::vector<std::pair<std::string, HistogramSnapshot>>& series,
                          std::string_view help) {
    Header(name, "histogram", help);
    for (const auto& [value, s] : series) {
      const std::string l = StrCat(label, "=\"", EscapePrometheusLabel(value), "\"");
      for (size_t i = 0; i <= s.bounds.size(); ++i) {
        const std::string le = i < s.bounds.size() ? FormatPrometheusValue(s.bounds[i]) : std::string("+Inf");
        StrAppend(prefix_, name, "_bucket{", l, ",le=\"", le, "\"} ", s.cumulative[i], "\n");
      }
      StrAppend(prefix_, name, "_sum{", l, "} ", FormatPrometheusValue(s.sum), "\n");
      StrAppend(prefix_, name, "_count{", l, "} ", s.count, "\n");
    }
  }

  void AddHistogram(std::string_view name, const Histogram& h, std::string_view help) {
    Header(name, "histogram", help);
    HistogramLines(name, h);
  }
  void AddGauge(std::string_view name, const Gauge& g, std::string_view help) {
    Header(name, "gauge", help);
    GaugeLine(name, g);
  }
  void AddCounter(std::string_view field, const Counter& c, std::string_view help) {
    const std::string name = CounterName(field);
    Header(name, "counter", help);
    CounterLine(name, c);
  }

  void AddValue(std::string_view name, std::string_view type, double value, std::string_view help) {
    const std::string n = type == "counter" ? CounterName(name) : std::string(name);
    Header(n, type, help);
    StrAppend(prefix_, n, " ", FormatPrometheusValue(value), "\n");
  }



  std::string Take() { return std::move(out_); }

 static std::string CounterName(std::string_view field) {
    constexpr std::string_view kTotal = "_total";
    if (field.size() >= kTotal.size() && field.substr(field.size() - kTotal.size()) == kTotal) {
      return std::string(field);
    }
    return StrCat(field, kTotal);
  }

 private:
  std::string Braced() const { return label_.empty() ? std::string() : StrCat("{", label_, "}"); }

  template <typename... Args>
  void StrAppend(const Args&... args) {
    out_ += StrCat(args...);
  }

  std::string_view prefix_;
  std::string label_;
  std::string out_;
};

}  // namespace

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
  return FormatPrometheus(std::vector<LabeledEngineMetrics>{{"", &m}}, prefix);
}

std::string FormatPrometheus(const std::vector<LabeledEngineMetrics>& models, std::string_view prefix) {
  SWIFTLET_CHECK(IsMetricNamePrefix(prefix));
  Writer w(prefix);
  // Each family once, a series per model.
  auto each = [&](auto add) {
    for (const LabeledEngineMetrics& lm : models) {
      w.SetLabel(lm.model.empty() ? std::string() : StrCat("model=\"", EscapePrometheusLabel(lm.model), "\""));
      add(*lm.metrics);
    }
    w.SetLabel("");
  };
  using M = const EngineMetrics&;
  auto histogram = [&](std::string_view name, const Histogram EngineMetrics::*field, std::string_view help) {
    w.Header(name, "histogram", help);
    each([&](M m) { w.HistogramLines(name, m.*field); });
  };
  auto gauge = [&](std::string_view name, const Gauge EngineMetrics::*field, std::string_view help) {
    w.Header(name, "gauge", help);
    each([&](M m) { w.GaugeLine(name, m.*field); });
  };
  auto counter = [&](std::string_view field_name, const Counter EngineMetrics::*field, std::string_view help) {
    const std::string name = Writer::CounterName(field_name);
    w.Header(name, "counter", help);
    each([&](M m) { w.CounterLine(name, m.*field); });
  };
  auto counter_vec = [&](std::string_view field_name, const auto EngineMetrics::*field, std::string_view help) {
    const std::string name = Writer::CounterName(field_name);
    w.Header(name, "counter", help);
    each([&](M m) { w.CounterVecLines(name, m.*field); });
  };
  histogram("time_to_first_token_seconds", &EngineMetrics::time_to_first_token_seconds,
            "Time from request received to its first token event, in seconds.");
  histogram("inter_token_latency_seconds", &EngineMetrics::inter_token_latency_seconds,
            "Time between consecutive token events of a request, in seconds.");
  histogram("time_per_output_token_seconds", &EngineMetrics::time_per_output_token_seconds,
            "Per request: (last token - first token) / (output tokens - 1), in seconds.");
  histogram("e2e_request_latency_seconds", &EngineMetrics::e2e_request_latency_seconds,
            "Time from request received to finished, in seconds.");
  histogram("queue_time_seconds", &EngineMetrics::queue_time_seconds,
            "Time from request received to its first prefill chunk, in seconds.");
  gauge("requests_running", &EngineMetrics::requests_running, "Requests prefilling or decoding.");
  gauge("requests_waiting", &EngineMetrics::requests_waiting, "Requests accepted and waiting to start.");
  gauge("kv_blocks_used", &EngineMetrics::kv_blocks_used, "KV cache blocks in use.");
  gauge("kv_blocks_capacity", &EngineMetrics::kv_blocks_total, "KV cache blocks in all.");
  counter("prefix_cache_queries_tokens", &EngineMetrics::prefix_cache_queries_tokens,
          "Prompt tokens looked up in the prefix cache.");
  counter("prefix_cache_hits_tokens", &EngineMetrics::prefix_cache_hits_tokens, "Prompt tokens found in the prefix cache.");
  counter("prompt_tokens_total", &EngineMetrics::prompt_tokens_total, "Prompt tokens of accepted requests.");
  counter("prompt_tokens_computed_total", &EngineMetrics::prompt_tokens_computed_total,
          "Prompt positions run through the forward pass (recomputation included).");
  counter("prompt_tokens_cached_total", &EngineMetrics::prompt_tokens_cached_total,
          "Prompt positions taken from the prefix cache or a request group's shared part.");
  counter("generation_tokens_total", &EngineMetrics::generation_tokens_total, "Output tokens generated.");
  counter_vec("requests_finished", &EngineMetrics::requests_finished, "Requests finished, by finish reason.");
  counter_vec("refusals", &EngineMetrics::refusals, "Requests refused at submission, by reason.");
  counter("preemptions_total", &EngineMetrics::preemptions_total, "Running requests preempted for KV cache space.");
  counter("prefix_warmups_total", &EngineMetrics::prefix_warmups_total,
          "Prompts refused for their TTFT target whose prefix was computed at batch priority.");
  return w.Take();
}

std::string FormatSloTargets(const LatencyTargets& interactive, const LatencyTargets& batch,
                             const LatencyTargets& embedding, std::string_view prefix) {
  SWIFTLET_CHECK(IsMetricNamePrefix(prefix));
  std::string out = StrCat("# HELP ", prefix,
                           "slo_target_seconds Latency target of a request class (the serve --slo-* flags), "
                           "in seconds.\n# TYPE ", prefix, "slo_target_seconds gauge\n");
  const std::pair<const char*, const LatencyTargets*> classes[] = {
      {"interactive", &interactive}, {"batch", &batch}, {"embedding", &embedding}};
  for (const auto& [name, t] : classes) {
    for (const auto& [target, ns] : {std::pair<const char*, int64_t>{"ttft", t->ttft_ns}, {"tpot", t->tpot_ns}}) {
      if (ns <= 0) continue;
      out += StrCat(prefix, "slo_target_seconds{class=\"", name, "\",target=\"", target, "\"} ",
                    FormatPrometheusValue(static_cast<double>(ns) / 1e9), "\n");
    }
  }
  return out;
}

std::string FormatHistogramFamily(std::string_view name, std::string_view label,
                                  const std::vector<std::pair<std::string, HistogramSnapshot>>& series,
                                  std::string_view help, std::string_view prefix) {
  SWIFTLET_CHECK(IsMetricNamePrefix(prefix));
  Writer w(prefix);
  w.AddHistogramFamily(name, label, series, help);
  return w.Take();
}

std::string FormatTranslatePrometheus(const translate::TranslateMetrics& m, const translate::CacheStats* cache,
                                      std::string_view prefix) {
  SWIFTLET_CHECK(IsMetricNamePrefix(prefix));
  Writer w(prefix);
  w.AddHistogramFamily("translate_latency_seconds", "language", m.LanguageLatencies(),
                       "Per target language: request received to its translation finished, in seconds.");
  w.AddCounter("translations_total", m.translations_total, "Translations answered (computed or cached).");
  w.AddCounter("translations_cached_total", m.translations_cached_total,
               "Translations answered from the translation cache.");
  w.AddCounter("translate_glossary_failures_total", m.glossary_failures_total,
               "Translations whose placeholders or fixed glossary terms did not survive (glossary_ok false).");
  w.AddCounter("translate_dropped_late_total", m.dropped_late_total,
               "Live-stream translations dropped because their budget had passed.");
  w.AddCounter("translate_dropped_overflow_total", m.dropped_overflow_total,
               "Live-stream comments dropped because the stream's queue was full.");
  w.AddCounter("translate_stream_comments_total", m.stream_comments_total, "Comments received on live streams.");
  w.AddGauge("translate_streams_active", m.streams_active, "Live translation streams open now.");
  w.AddHistogram("translate_stream_queue_depth", m.stream_queue_depth,
                 "Comments queued on a live stream, observed at each arrival.");
  if (cache != nullptr) {
    w.AddValue("translate_cache_hits", "counter", static_cast<double>(cache->hits), "Translation cache hits.");
    w.AddValue("translate_cache_misses", "counter", static_cast<double>(cache->misses),
               "Translation cache misses (backend errors included).");
    w.AddValue("translate_cache_evictions", "counter", static_cast<double>(cache->evictions),
               "Translation cache entries pushed out by its size bound.");
    w.AddValue("translate_cache_errors", "counter", static_cast<double>(cache->errors),
               "Translation cache backend failures.");
    w.AddValue("translate_cache_entries", "gauge", static_cast<double>(cache->entries),
               "Entries in the in-process translation cache.");
    w.AddValue("translate_cache_bytes", "gauge", static_cast<double>(cache->bytes),
               "Bytes held by the in-process translation cache.");
  }
  return w.Take();
}

}  // namespace swiftlet::server
