// The /metrics text format against a small parser of the exposition format
// written here from the Prometheus documentation.
#include "server/prometheus_text.h"

#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/clock.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

namespace swiftlet::server {
namespace {

TEST(PrometheusTextTest, ValueAndLabelFormatting) {
  EXPECT_EQ(FormatPrometheusValue(NAN), "NaN");
  EXPECT_EQ(FormatPrometheusValue(INFINITY), "+Inf");
  EXPECT_EQ(FormatPrometheusValue(-INFINITY), "-Inf");
  EXPECT_EQ(FormatPrometheusValue(0.005), "0.005");
  EXPECT_EQ(FormatPrometheusValue(1.0), "1");
  EXPECT_EQ(FormatPrometheusValue(2.5), "2.5");
  EXPECT_EQ(EscapePrometheusLabel("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

// ---- A small, independent parser of the text exposition format ------------

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Family {
  std::string type;
  std::string help;
  std::vector<Sample> samples;
};

bool IsName(const std::string& s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
          (i > 0 && std::isdigit(static_cast<unsigned char>(c))))) {
      return false;
    }
  }
  return true;
}

double ParseValue(const std::string& s) {
  if (s == "+Inf") return INFINITY;
  if (s == "-Inf") return -INFINITY;
  if (s == "NaN") return NAN;
  size_t used = 0;
  const double v = std::stod(s, &used);
  EXPECT_EQ(used, s.size()) << "value " << s;
  return v;
}

// The family a sample belongs to: its name, or for histograms the name
// without _bucket/_sum/_count.
std::string FamilyOf(const std::string& name, const std::map<std::string, Family>& families) {
  if (families.count(name)) return name;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const std::string base = name.substr(0, name.size() - s.size());
      if (families.count(base) && families.at(base).type == "histogram") return base;
    }
  }
  return "";
}

// Fails the test on malformed input.
std::map<std::string, Family> Parse(const std::string& text) {
  std::map<std::string, Family> families;
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    EXPECT_FALSE(line.empty()) << "blank line";
    if (line.rfind("# ", 0) == 0) {
      std::istringstream words(line.substr(2));
      std::string kind, name, rest;
      words >> kind >> name;
      std::getline(words, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      EXPECT_TRUE(IsName(name)) << line;
      Family& f = families[name];
      EXPECT_TRUE(f.samples.empty()) << "metadata after samples: " << line;
      if (kind == "HELP") {
        EXPECT_FALSE(rest.empty()) << line;
        f.help = rest;
      } else if (kind == "TYPE") {
        EXPECT_TRUE(rest == "counter" || rest == "gauge" || rest == "histogram") << line;
        EXPECT_TRUE(f.type.empty()) << "second TYPE: " << line;
        f.type = rest;
      } else {
        ADD_FAILURE() << "unknown comment " << line;
      }
      continue;
    }
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    EXPECT_TRUE(IsName(s.name)) << line;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t eq = line.find('=', i);
        EXPECT_NE(eq, std::string::npos) << line;
        if (eq == std::string::npos) return families;
        const std::string label = line.substr(i, eq - i);
        EXPECT_TRUE(IsName(label)) << line;
        EXPECT_EQ(line[eq + 1], '"') << line;
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            ++j;
            EXPECT_TRUE(line[j] == '\\' || line[j] == '"' || line[j] == 'n') << line;
            value.push_back(line[j] == 'n' ? '\n' : line[j]);
          } else {
            value.push_back(line[j]);
          }
        }
        EXPECT_LT(j, line.size()) << "unterminated label value: " << line;
        s.labels[label] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    EXPECT_EQ(line[i], ' ') << line;
    s.value = ParseValue(line.substr(i + 1));
    const std::string family = FamilyOf(s.name, families);
    EXPECT_FALSE(family.empty()) << "sample without HELP/TYPE: " << line;
    if (family.empty()) continue;
    EXPECT_FALSE(families[family].help.empty()) << line;
    families[family].samples.push_back(s);
  }
  return families;
}

// Checks the rules of each family's type; returns the histogram's buckets.
void CheckFamily(const std::string& name, const Family& f) {
  SCOPED_TRACE(name);
  ASSERT_FALSE(f.type.empty());
  ASSERT_FALSE(f.samples.empty());
  const bool total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
  EXPECT_EQ(total, f.type == "counter");
  if (f.type == "counter") {
    for (const Sample& s : f.samples) EXPECT_GE(s.value, 0);
  }
  if (f.type != "histogram") return;
  // Each series (the labels other than le: one per model) on its own.
  struct Series {
    double last_le = -INFINITY, last_count = 0, inf_count = -1, count = -1;
    bool sum_seen = false;
  };
  std::map<std::map<std::string, std::string>, Series> series;
  for (const Sample& s : f.samples) {
    std::map<std::string, std::string> key = s.labels;
    key.erase("le");
    Series& h = series[key];
    if (s.name == name + "_bucket") {
      ASSERT_EQ(s.labels.count("le"), 1u);
      const double le = ParseValue(s.labels.at("le"));
      EXPECT_GT(le, h.last_le);
      EXPECT_GE(s.value, h.last_count) << "buckets not cumulative";
      h.last_le = le;
      h.last_count = s.value;
      if (std::isinf(le)) h.inf_count = s.value;
    } else if (s.name == name + "_sum") {
      h.sum_seen = true;
    } else if (s.name == name + "_count") {
      h.count = s.value;
    }
  }
  for (const auto& [labels, h] : series) {
    EXPECT_TRUE(std::isinf(h.last_le)) << "no +Inf bucket last";
    EXPECT_TRUE(h.sum_seen);
    EXPECT_EQ(h.inf_count, h.count);
  }
}

const Sample* Find(const std::map<std::string, Family>& fams, const std::string& name,
                   const std::map<std::string, std::string>& labels = {}) {
  for (const auto& [family, f] : fams) {
    for (const Sample& s : f.samples) {
      if (s.name == name && s.labels == labels) return &s;
    }
  }
  return nullptr;
}

double ValueOf(const std::map<std::string, Family>& fams, const std::string& name,
               const std::map<std::string, std::string>& labels = {}) {
  const Sample* s = Find(fams, name, labels);
  EXPECT_NE(s, nullptr) << name;
  return s ? s->value : NAN;
}

TEST(PrometheusTextTest, PrometheusTextParsesBack) {
  EngineMetrics m;
  m.time_to_first_token_seconds.Observe(0.005);  // On the first bound.
  m.time_to_first_token_seconds.Observe(0.2);
  m.time_to_first_token_seconds.Observe(120);    // +Inf only.
  m.inter_token_latency_seconds.Observe(0.02);
  m.requests_running.Set(3);
  m.requests_waiting.Set(7);
  m.kv_blocks_used.Set(10);
  m.kv_blocks_total.Set(64);
  m.prefix_cache_queries_tokens.Add(100);
  m.prefix_cache_hits_tokens.Add(48);
  m.prompt_tokens_total.Add(42);
  m.prompt_tokens_computed_total.Add(30);
  m.prompt_tokens_cached_total.Add(12);
  m.generation_tokens_total.Add(9);
  m.requests_finished.Add(FinishReason::kStop, 5);
  m.requests_finished.Add(FinishReason::kLength);
  m.refusals.Add(RefusalReason::kTtftTarget, 2);
  m.preemptions_total.Add(4);
  m.prefix_warmups_total.Add(3);

  const std::string text = FormatPrometheus(m);
  const std::map<std::string, Family> fams = Parse(text);
  EXPECT_EQ(fams.size(), 19u) << text;
  for (const auto& [name, f] : fams) {
    EXPECT_EQ(name.rfind("swiftlet_", 0), 0u) << name;
    CheckFamily(name, f);
  }

  EXPECT_EQ(fams.at("swiftlet_time_to_first_token_seconds").type, "histogram");
  EXPECT_EQ(ValueOf(fams, "swiftlet_time_to_first_token_seconds_bucket", {{"le", "0.005"}}), 1);
  EXPECT_EQ(ValueOf(fams, "swiftlet_time_to_first_token_seconds_bucket", {{"le", "0.15"}}), 1);
  EXPECT_EQ(ValueOf(fams, "swiftlet_time_to_first_token_seconds_bucket", {{"le", "0.2"}}), 2);
  EXPECT_EQ(ValueOf(fams, "swiftlet_time_to_first_token_seconds_bucket", {{"le", "60"}}), 2);
  EXPECT_EQ(ValueOf(fams, "swiftlet_time_to_first_token_seconds_bucket", {{"le", "+Inf"}}), 3);
  EXPECT_DOUBLE_EQ(ValueOf(fams, "swiftlet_time_to_first_token_seconds_sum"), 120.205);
  EXPECT_EQ(ValueOf(fams, "swiftlet_time_to_first_token_seconds_count"), 3);
  EXPECT_EQ(ValueOf(fams, "swiftlet_queue_time_seconds_count"), 0);

  EXPECT_EQ(fams.at("swiftlet_requests_running").type, "gauge");
  EXPECT_EQ(ValueOf(fams, "swiftlet_requests_running"), 3);
  EXPECT_EQ(ValueOf(fams, "swiftlet_requests_waiting"), 7);
  EXPECT_EQ(ValueOf(fams, "swiftlet_kv_blocks_used"), 10);
  EXPECT_EQ(ValueOf(fams, "swiftlet_kv_blocks_capacity"), 64);

  EXPECT_EQ(fams.at("swiftlet_prompt_tokens_total").type, "counter");
  EXPECT_EQ(ValueOf(fams, "swiftlet_prompt_tokens_total"), 42);
  EXPECT_EQ(ValueOf(fams, "swiftlet_prompt_tokens_computed_total"), 30);
  EXPECT_EQ(ValueOf(fams, "swiftlet_prompt_tokens_cached_total"), 12);
  EXPECT_EQ(ValueOf(fams, "swiftlet_generation_tokens_total"), 9);
  EXPECT_EQ(ValueOf(fams, "swiftlet_prefix_cache_queries_tokens_total"), 100);
  EXPECT_EQ(ValueOf(fams, "swiftlet_prefix_cache_hits_tokens_total"), 48);
  EXPECT_EQ(ValueOf(fams, "swiftlet_preemptions_total"), 4);
  EXPECT_EQ(ValueOf(fams, "swiftlet_prefix_warmups_total"), 3);
  EXPECT_EQ(ValueOf(fams, "swiftlet_requests_finished_total", {{"reason", "stop"}}), 5);
  EXPECT_EQ(ValueOf(fams, "swiftlet_requests_finished_total", {{"reason", "length"}}), 1);
  EXPECT_EQ(ValueOf(fams, "swiftlet_requests_finished_total", {{"reason", "error"}}), 0);
  EXPECT_EQ(fams.at("swiftlet_requests_finished_total").samples.size(), 5u);
  EXPECT_EQ(ValueOf(fams, "swiftlet_refusals_total", {{"reason", "ttft_target"}}), 2);
  EXPECT_EQ(Find(fams, "swiftlet_refusals_total", {{"reason", "none"}}), nullptr);
  EXPECT_EQ(fams.at("swiftlet_refusals_total").samples.size(), 6u);

  const std::map<std::string, Family> other = Parse(FormatPrometheus(m, "x_"));
  EXPECT_EQ(other.size(), 19u);
  EXPECT_EQ(ValueOf(other, "x_requests_running"), 3);
}

TEST(PrometheusTextTest, SeveralModelsShareEachFamilyWithAModelLabel) {
  EngineMetrics a, b;
  a.requests_running.Set(3);
  b.requests_running.Set(5);
  a.generation_tokens_total.Add(7);
  b.time_to_first_token_seconds.Observe(0.1);
  b.requests_finished.Add(FinishReason::kStop, 2);
  const std::string text = FormatPrometheus({{"chat", &a}, {"tr\"x", &b}});
  const std::map<std::string, Family> fams = Parse(text);
  EXPECT_EQ(fams.size(), 19u) << text;  // Each family once (HELP and TYPE once).
  for (const auto& [name, f] : fams) CheckFamily(name, f);
  EXPECT_EQ(ValueOf(fams, "swiftlet_requests_running", {{"model", "chat"}}), 3);
  EXPECT_EQ(ValueOf(fams, "swiftlet_requests_running", {{"model", "tr\"x"}}), 5);
  EXPECT_EQ(ValueOf(fams, "swiftlet_generation_tokens_total", {{"model", "chat"}}), 7);
  EXPECT_EQ(ValueOf(fams, "swiftlet_generation_tokens_total", {{"model", "tr\"x"}}), 0);
  EXPECT_EQ(ValueOf(fams, "swiftlet_time_to_first_token_seconds_bucket", {{"model", "tr\"x"}, {"le", "+Inf"}}), 1);
  EXPECT_EQ(ValueOf(fams, "swiftlet_time_to_first_token_seconds_count", {{"model", "chat"}}), 0);
  EXPECT_EQ(ValueOf(fams, "swiftlet_requests_finished_total", {{"model", "tr\"x"}, {"reason", "stop"}}), 2);
  EXPECT_EQ(fams.at("swiftlet_requests_running").samples.size(), 2u);
  // One HELP line per family.
  size_t helps = 0;
  for (size_t at = text.find("# HELP swiftlet_requests_running "); at != std::string::npos;
       at = text.find("# HELP swiftlet_requests_running ", at + 1)) {
    ++helps;
  }
  EXPECT_EQ(helps, 1u);
}

TEST(PrometheusTextTest, TranslationMetricsParseBack) {
  translate::TranslateMetrics m;
  m.ObserveLanguageLatency("ja", 0.12);
  m.ObserveLanguageLatency("ja", 0.4);
  m.ObserveLanguageLatency("zh-Hant", 2.0);
  m.translations_total.Add(3);
  m.dropped_late_total.Add(2);
  m.streams_active.Set(5);
  m.stream_queue_depth.Observe(3);
  translate::CacheStats cache;
  cache.hits = 7;
  cache.misses = 4;
  cache.entries = 2;
  const std::string text = FormatTranslatePrometheus(m, &cache);
  const std::map<std::string, Family> fams = Parse(text);
  // CheckFamily reads one series per family; the per-language histogram has
  // several (promtool checks the whole text in e2e_serve_metrics).
  for (const auto& [name, f] : fams) {
    if (name != "swiftlet_translate_latency_seconds") CheckFamily(name, f);
  }
  EXPECT_EQ(fams.at("swiftlet_translate_latency_seconds").type, "histogram");
  EXPECT_EQ(ValueOf(fams, "swiftlet_translate_latency_seconds_count", {{"language", "ja"}}), 2);
  EXPECT_EQ(ValueOf(fams, "swiftlet_translate_latency_seconds_bucket", {{"language", "ja"}, {"le", "0.15"}}), 1);
  EXPECT_EQ(ValueOf(fams, "swiftlet_translate_latency_seconds_bucket", {{"language", "zh-Hant"}, {"le", "+Inf"}}), 1);
  EXPECT_EQ(ValueOf(fams, "swiftlet_translations_total"), 3);
  EXPECT_EQ(ValueOf(fams, "swiftlet_translate_dropped_late_total"), 2);
  EXPECT_EQ(ValueOf(fams, "swiftlet_translate_streams_active"), 5);
  EXPECT_EQ(ValueOf(fams, "swiftlet_translate_cache_hits_total"), 7);
  EXPECT_EQ(ValueOf(fams, "swiftlet_translate_cache_entries"), 2);
  // Without a cache, no cache families.
  EXPECT_EQ(Parse(FormatTranslatePrometheus(m, nullptr)).count("swiftlet_translate_cache_hits_total"), 0u);
}

TEST(PrometheusTextTest, SloTargetsOneGaugePerSetTarget) {
  const LatencyTargets interactive{500 * kNsPerMs, 100 * kNsPerMs};
  const LatencyTargets batch{30 * kNsPerSecond, 0};
  const LatencyTargets embedding{2 * kNsPerSecond, 0};
  const std::map<std::string, Family> fams = Parse(FormatSloTargets(interactive, batch, embedding));
  ASSERT_EQ(fams.count("swiftlet_slo_target_seconds"), 1u);
  EXPECT_EQ(fams.at("swiftlet_slo_target_seconds").type, "gauge");
  EXPECT_EQ(ValueOf(fams, "swiftlet_slo_target_seconds", {{"class", "interactive"}, {"target", "ttft"}}), 0.5);
  EXPECT_EQ(ValueOf(fams, "swiftlet_slo_target_seconds", {{"class", "interactive"}, {"target", "tpot"}}), 0.1);
  EXPECT_EQ(ValueOf(fams, "swiftlet_slo_target_seconds", {{"class", "batch"}, {"target", "ttft"}}), 30);
  // No TPOT target for batch: no sample, rather than a 0 every alert would trip on.
  EXPECT_EQ(fams.at("swiftlet_slo_target_seconds").samples.size(), 4u);
}

TEST(PrometheusTextTest, ParserCatchesBrokenHistogram) {
  // The checks above can fail: a non-cumulative histogram is caught.
  const std::string bad =
      "# HELP h_seconds h\n# TYPE h_seconds histogram\n"
      "h_seconds_bucket{le=\"1\"} 3\nh_seconds_bucket{le=\"+Inf\"} 2\n"
      "h_seconds_sum 1\nh_seconds_count 2\n";
  const std::map<std::string, Family> fams = Parse(bad);
  EXPECT_NONFATAL_FAILURE(CheckFamily("h_seconds", fams.at("h_seconds")), "not cumulative");
}

}  // namespace
}  // namespace swiftlet::server
