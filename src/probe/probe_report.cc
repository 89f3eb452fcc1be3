#include "probe/probe_report.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/number_format.h"
#include "core/str_cat.h"

namespace swiftlet::probe {
namespace {

// Sizes the sizing rule is shown for: a small model's weights, a large
// one's, and a large one with its KV cache snapshot.
constexpr double kSizingGb[] = {1, 10, 100};

std::string Duration(double seconds) {
  if (seconds < 120) return StrCat(Fixed(seconds, 1), " s");
  if (seconds < 7200) return StrCat(Fixed(seconds / 60, 1), " min");
  return StrCat(Fixed(seconds / 3600, 1), " h");
}

std::string Row(std::string_view name, const Samples& samples) {
  const Summary s = Summarize(samples);
  std::string row = StrCat("  ", name, std::string(10 - std::min<size_t>(name.size(), 9), ' '));
  if (s.n == 0) {
    row += StrCat("no sample (", s.attempts, " attempts", samples.last_error.empty() ? "" : ": ",
                  samples.last_error, ")\n");
    return row;
  }
  auto cell = [](double ms) {
    std::string c = StrCat(Fixed(ms, 2), " ms");
    return c + std::string(c.size() < 12 ? 12 - c.size() : 1, ' ');
  };
  row += cell(s.p50) + cell(s.p95) + cell(s.p99) + cell(s.jitter);
  row += StrCat(Fixed(s.loss_pct, 1), "%");
  if (s.loss_pct > 0 && !samples.last_error.empty()) row += StrCat("  (last: ", samples.last_error, ")");
  return row + "\n";
}

nlohmann::ordered_json SummaryJson(const Samples& samples) {
  const Summary s = Summarize(samples);
  nlohmann::ordered_json j;
  j["n"] = s.n;
  j["attempts"] = s.attempts;
  auto ms = [&](double v) { return s.n > 0 ? nlohmann::ordered_json(std::round(v * 1000) / 1000) : nlohmann::ordered_json(nullptr); };
  j["p50"] = ms(s.p50);
  j["p95"] = ms(s.p95);
  j["p99"] = ms(s.p99);
  j["mean"] = ms(s.mean);
  j["min"] = ms(s.min);
  j["max"] = ms(s.max);
  j["jitter"] = ms(s.jitter);
  j["loss_pct"] = std::round(s.loss_pct * 100) / 100;
  j["last_error"] = samples.last_error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(samples.last_error);
  return j;
}

}  // namespace

std::string FormatText(const std::vector<TargetResult>& results, const ProbeOptions& o) {
  std::string out = StrCat("swiftlet probe: ", o.samples, " samples per target, a fresh connection each, timeout ",
                           Fixed(static_cast<double>(o.timeout_ns) / 1e9, 1), " s\n");
  for (const TargetResult& r : results) {
    out += StrCat("\n", r.target.url, "\n");
    if (!r.error.empty()) {
      out += StrCat("  error: ", r.error, "\n");
      continue;
    }
    out += "  metric    p50         p95         p99         jitter      loss\n";
    out += Row("connect", r.connect);
    out += r.target.scheme == Scheme::kHttps ? Row("tls", r.tls) : "  tls       - (http)\n";
    out += Row("ttfb", r.ttfb);
    if (o.completion) out += Row("ttft", r.ttft);
    if (r.download.has_value()) {
      const DownloadResult& d = *r.download;
      if (!d.error.empty()) {
        out += StrCat("  download  error: ", d.error, "\n");
      } else {
        out += StrCat("  download  ", Fixed(static_cast<double>(d.bytes) / (1 << 20), 1), " MiB in ",
                      Fixed(d.seconds, 3), " s: ", Fixed(d.mbps, 1), " Mbps\n");
        out += "  sizing    transfer time = GB x 8000 / Mbps:";
        for (double gb : kSizingGb) out += StrCat(" ", gb, " GB ", Duration(TransferSeconds(gb, d.mbps)), ";");
        out.back() = '\n';
      }
    }
  }
  return out;
}

std::string FormatJson(const std::vector<TargetResult>& results, const ProbeOptions& o) {
  nlohmann::ordered_json doc;
  doc["samples"] = o.samples;
  doc["timeout_ms"] = o.timeout_ns / 1'000'000;
  doc["unit"] = "ms";
  nlohmann::ordered_json targets = nlohmann::ordered_json::array();
  for (const TargetResult& r : results) {
    nlohmann::ordered_json t;
    t["url"] = r.target.url;
    t["error"] = r.error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.error);
    if (r.error.empty()) {
      t["connect"] = SummaryJson(r.connect);
      t["tls"] = r.target.scheme == Scheme::kHttps ? SummaryJson(r.tls) : nlohmann::ordered_json(nullptr);
      t["ttfb"] = SummaryJson(r.ttfb);
      t["ttft"] = o.completion ? SummaryJson(r.ttft) : nlohmann::ordered_json(nullptr);
      if (r.download.has_value()) {
        const DownloadResult& d = *r.download;
        nlohmann::ordered_json dj;
        dj["bytes"] = d.bytes;
        dj["seconds"] = d.seconds;
        dj["mbps"] = d.mbps;
        dj["error"] = d.error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(d.error);
        nlohmann::ordered_json sizing = nlohmann::ordered_json::object();
        sizing["rule"] = "transfer_seconds = GB * 8000 / Mbps";
        for (double gb : kSizingGb) sizing[StrCat(gb, "GB_seconds")] = TransferSeconds(gb, d.mbps);
        dj["sizing"] = std::move(sizing);
        t["download"] = std::move(dj);
      }
    }
    targets.push_back(std::move(t));
  }
  doc["targets"] = std::move(targets);
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace swiftlet::probe
