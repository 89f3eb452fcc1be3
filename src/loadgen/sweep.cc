#include "loadgen/sweep.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <future>
#include <string>

#include "api/response_codec.h"
#include "core/duration.h"
#include "core/str_cat.h"
#include "http/client.h"
#include "loadgen/arrival_schedule.h"
#include "loadgen/comment_load.h"
#include "loadgen/comment_report.h"
#include "loadgen/load_runner.h"
#include "loadgen/point_summary.h"
#include "loadgen/report.h"
#include "loadgen/workload.h"

namespace swiftlet::loadgen {
namespace {

struct ParsedUrl {
  bool tls = false;  // https://
  std::string host;
  uint16_t port = 80;
  std::string prefix;  // Path before /v1/..., without a trailing slash.
};

// http[s]://HOST[:PORT][/PREFIX]; a trailing /v1 (an OpenAI base URL) is
// dropped, since the workloads name /v1/... themselves.
absl::StatusOr<ParsedUrl> ParseUrl(std::string_view url) {
  const bool tls = url.starts_with("https://");
  if (!tls && !url.starts_with("http://")) {
    return absl::InvalidArgumentError("expected http[s]://HOST[:PORT][/PATH]");
  }
  std::string_view rest = url.substr(tls ? 8 : 7);
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string prefix = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (prefix.ends_with("/v1")) prefix.resize(prefix.size() - 3);
  if (prefix.find_first_of("?# ") != std::string::npos) {
    return absl::InvalidArgumentError("the URL path may not hold a query, fragment or space");
  }
  ParsedUrl out;
  out.tls = tls;
  out.port = tls ? 443 : 80;
  out.prefix = prefix;
  const size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']') == std::string_view::npos) {
    const std::string port(authority.substr(colon + 1));
    char* end = nullptr;
    const long v = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || v < 1 || v > 65535) {
      return absl::InvalidArgumentError(StrCat("bad port '", port, "'"));
    }
    out.port = static_cast<uint16_t>(v);
    authority = authority.substr(0, colon);
  }
  if (authority.empty()) return absl::InvalidArgumentError("the URL names no host");
  out.host = std::string(authority);
  return out;
}

// The clients' TLS for `url`: https verifies the server against --ca (or
// the system's authorities).
absl::StatusOr<http::TlsClientOptions> ClientTls(const ParsedUrl& url, const SweepOptions& o) {
  http::TlsClientOptions tls;
  if (!url.tls) {
    if (!o.ca_file.empty()) return absl::InvalidArgumentError("--ca: only with an https:// --url");
    return tls;
  }
  tls.use_tls = true;
  tls.ca_file = o.ca_file;
  if (absl::Status s = http::CheckTlsClientOptions(tls); !s.ok()) {
    return absl::InvalidArgumentError(StrCat("--ca: ", s.message()));
  }
  return tls;
}

// GET /v1/models and the first id.
absl::StatusOr<std::string> FirstModel(http::HttpClient& client, const std::string& prefix,
                                       const std::string& api_key) {
  std::promise<std::pair<absl::Status, http::ClientResponse>> done;
  auto answer = done.get_future();
  http::ClientRequest req;
  req.method = "GET";
  req.target = prefix + "/v1/models";
  if (!api_key.empty()) req.headers.Add("Authorization", "Bearer " + api_key);
  http::ClientCallbacks cb;
  cb.on_done = [&done](absl::Status s, http::ClientResponse r) { done.set_value({s, std::move(r)}); };
  client.Send(std::move(req), std::move(cb));
  auto [status, response] = answer.get();
  if (!status.ok()) return absl::UnavailableError(StrCat("GET /v1/models: ", status.message()));
  if (response.status != 200) {
    return absl::UnavailableError(StrCat("GET /v1/models answered ", response.status, " (give --model)"));
  }
  auto models = api::ParseModelList(response.body);
  if (!models.ok()) return absl::UnavailableError(StrCat("GET /v1/models: ", models.status().message()));
  if (models->empty()) return absl::UnavailableError("GET /v1/models lists no model (give --model)");
  return models->front().id;
}

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(StrCat("cannot write ", path));
  out << text;
  out.close();
  if (!out) return absl::DataLossError(StrCat("writing ", path, " failed"));
  return absl::OkStatus();
}

// A bar on a terminal; nothing when stderr is redirected (logs stay clean).
ProgressFn ProgressBar(const std::string& label) {
  if (isatty(STDERR_FILENO) == 0) return nullptr;
  return [label](const Progress& p) {
    constexpr int kWidth = 30;
    const int filled = p.total > 0 ? static_cast<int>(kWidth * std::min<int64_t>(p.done, p.total) / p.total) : 0;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, p.total > 0 ? '.' : ' ');
    std::fprintf(stderr, "\r%s [%s] %lld sent, %lld done%s", label.c_str(), bar.c_str(),
                 static_cast<long long>(p.sent), static_cast<long long>(p.done),
                 p.total > 0 ? StrCat(" of ", p.total).c_str() : "");
    if (p.total > 0 && p.done >= p.total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}


// live-comments with --transport: the per-comment load, a point per
// --comment-rate.
absl::Status RunCommentSweep(const SweepOptions& o, const ParsedUrl& url) {
  if (o.workload != "live-comments") return absl::InvalidArgumentError("--transport: only with --workload live-comments");
  if (o.comment_rates.empty()) return absl::InvalidArgumentError("--comment-rate: required with --transport");
  if (!o.rates.empty() || !o.concurrencies.empty()) {
    return absl::InvalidArgumentError("--transport: give --comment-rate, not --rate or --concurrency");
  }
  auto budget = ParseDuration(o.budget);
  if (!budget.ok() || *budget <= 0) return absl::InvalidArgumentError("--budget: expected a positive duration such as 800ms");
  auto timeout = ParseDuration(o.timeout);
  if (!timeout.ok() || *timeout <= 0) return absl::InvalidArgumentError("--timeout: expected a positive duration such as 120s");
  auto output = LengthSpec::Parse(o.output_tokens);
  if (!output.ok()) return absl::InvalidArgumentError(StrCat("--output-tokens: ", output.status().message()));
  int64_t duration_ns = 0;
  if (!o.duration.empty()) {
    auto d = ParseDuration(o.duration);
    if (!d.ok() || *d <= 0) return absl::InvalidArgumentError("--duration: expected a positive duration such as 30s");
    duration_ns = *d;
  }
  SWIFTLET_ASSIGN_OR_RETURN(http::TlsClientOptions tls, ClientTls(url, o));
  CommentLoadOptions base;
  base.host = url.host;
  base.port = url.port;
  base.tls = tls;
  base.prefix = url.prefix;
  base.transport = o.transport;
  base.languages = DefaultLanguages(o.languages);
  base.streams = o.streams;
  base.comments = o.requests;
  base.duration_ns = duration_ns;
  base.budget_ns = *budget;
  base.output_tokens = static_cast<int32_t>(output->max);
  base.drain_timeout_ns = *timeout;
  base.api_key = o.api_key;
  for (double rate : o.comment_rates) {
    CommentLoadOptions p = base;
    p.comment_rate = rate;
    SWIFTLET_RETURN_IF_ERROR(ValidateCommentLoad(p));
  }
  http::HttpClientOptions client_options;
  client_options.host = url.host;
  client_options.port = url.port;
  client_options.tls = tls;
  http::HttpClient client(client_options);
  std::string model = o.model;
  if (model.empty()) {
    auto m = FirstModel(client, url.prefix, o.api_key);
    if (!m.ok()) return absl::UnavailableError(StrCat(o.url, ": ", m.status().message()));
    model = *m;
  }
  base.model = model;
  CommentSweepParameters params;
  params.url = o.url;
  params.model = model;
  params.transport = o.transport;
  params.languages = base.languages;
  params.streams = o.streams;
  params.budget_ms = *budget / kNsPerMs;
  params.output_tokens = base.output_tokens;
  params.started_utc = UtcNow();
  params.client_machine = o.client_machine;
  std::printf("swiftlet bench: %s, model %s, live comments over %s, %lld streams, %zu languages, %d tokens each, "
              "budget %lld ms\nclient: %s\n",
              o.url.c_str(), model.c_str(), o.transport.c_str(), static_cast<long long>(o.streams),
              base.languages.size(), base.output_tokens, static_cast<long long>(params.budget_ms),
              o.client_machine.c_str());
  std::fflush(stdout);
  std::vector<CommentPoint> points;
  for (size_t i = 0; i < o.comment_rates.size(); ++i) {
    CommentLoadOptions p = base;
    p.comment_rate = o.comment_rates[i];
    p.seed = o.seed + i * 7919;
    const double expected = o.requests > 0 ? static_cast<double>(o.requests)
                                           : p.comment_rate * static_cast<double>(o.streams) * static_cast<double>(duration_ns) / 1e9;
    p.warmup_comments = o.warmup >= 0 ? o.warmup : std::min<int64_t>(20, static_cast<int64_t>(expected / 10));
    std::fprintf(stderr, "swiftlet bench: %.2f comments/s per stream\n", p.comment_rate);
    auto run = RunCommentLoad(p, SystemClock(), SystemSleep());
    if (!run.ok()) return absl::UnavailableError(StrCat(o.url, ": ", run.status().message()));
    CommentPoint point;
    point.comment_rate = p.comment_rate;
    point.report = SummarizeComments(run->outcomes, p.budget_ns, static_cast<int>(p.languages.size()));
    point.run = *std::move(run);
    std::printf("%s", FormatCommentPoint(params, point).c_str());
    std::fflush(stdout);
    points.push_back(std::move(point));
  }
  std::printf("\n%s", FormatCommentTable(params, points).c_str());
  if (!o.json_path.empty()) {
    if (absl::Status s = WriteFile(o.json_path, CommentReportJson(params, points)); !s.ok()) {
      return absl::DataLossError(StrCat("--json: ", s.message()));
    }
  }
  if (!o.html_path.empty()) {
    if (absl::Status s = WriteFile(o.html_path, CommentReportHtml(params, points)); !s.ok()) {
      return absl::DataLossError(StrCat("--html: ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunSweep(const SweepOptions& o) {
  if (o.url.empty()) return absl::InvalidArgumentError("bench: give --url (the server to load), or run `swiftlet bench engine`");
  auto url = ParseUrl(o.url);
  if (!url.ok()) return absl::InvalidArgumentError(StrCat("--url: ", url.status().message()));
  if (!o.transport.empty()) return RunCommentSweep(o, *url);
  if (!o.comment_rates.empty()) return absl::InvalidArgumentError("--comment-rate: only with --transport");
  if (o.rates.empty() == o.concurrencies.empty()) {
    return absl::InvalidArgumentError("bench: give exactly one of --rate and --concurrency");
  }
  for (double r : o.rates) {
    if (!(r > 0) || r > 100000) return absl::InvalidArgumentError("--rate: each rate must be in (0, 100000] requests/s");
  }
  int64_t duration_ns = 0;
  if (!o.duration.empty()) {
    auto d = ParseDuration(o.duration);
    if (!d.ok() || *d <= 0) return absl::InvalidArgumentError("--duration: expected a positive duration such as 30s");
    duration_ns = *d;
  }
  if ((o.requests > 0) == (duration_ns > 0)) {
    return absl::InvalidArgumentError("bench: give exactly one of --requests and --duration");
  }
  auto timeout = ParseDuration(o.timeout);
  if (!timeout.ok() || *timeout <= 0) return absl::InvalidArgumentError("--timeout: expected a positive duration such as 120s");
  auto slo_list = ParseDurationList(o.slo, {"ttft", "tpot", "e2e"});
  if (!slo_list.ok()) return absl::InvalidArgumentError(StrCat("--slo: ", slo_list.status().message()));
  SloTargets slo;
  for (const auto& [key, ns] : *slo_list) {
    (key == "ttft" ? slo.ttft_ns : key == "tpot" ? slo.tpot_ns : slo.e2e_ns) = ns;
  }
  auto prompt = LengthSpec::Parse(o.prompt_tokens);
  if (!prompt.ok()) return absl::InvalidArgumentError(StrCat("--prompt-tokens: ", prompt.status().message()));
  auto output = LengthSpec::Parse(o.output_tokens);
  if (!output.ok()) return absl::InvalidArgumentError(StrCat("--output-tokens: ", output.status().message()));
  if (o.workload != "live-comments" && (o.streams != 1)) {
    return absl::InvalidArgumentError("--streams: only the live-comments workload has streams");
  }

  auto tls = ClientTls(*url, o);
  if (!tls.ok()) return tls.status();
  http::HttpClientOptions client_options;
  client_options.host = url->host;
  client_options.port = url->port;
  client_options.tls = *tls;
  client_options.idle_timeout = std::chrono::milliseconds(*timeout / kNsPerMs);
  client_options.request_timeout = std::chrono::milliseconds(*timeout / kNsPerMs);
  http::HttpClient client(client_options);

  std::string model = o.model;
  if (model.empty()) {
    auto m = FirstModel(client, url->prefix, o.api_key);
    if (!m.ok()) return absl::UnavailableError(StrCat(o.url, ": ", m.status().message()));
    model = *m;
  }
  WorkloadOptions wo;
  wo.model = model;
  wo.prompt_words = *prompt;
  wo.output_tokens = *output;
  wo.languages = o.languages;
  wo.shared_prefix_words = o.shared_prefix_words;
  wo.seed = o.seed;
  auto workload = MakeWorkload(o.workload, wo);
  if (!workload.ok()) return absl::InvalidArgumentError(StrCat("--workload: ", workload.status().message()));

  // Each point, checked before any runs, so a bad flag fails fast.
  std::vector<LoadPoint> points;
  const size_t n_points = o.rates.empty() ? o.concurrencies.size() : o.rates.size();
  for (size_t i = 0; i < n_points; ++i) {
    LoadPoint p;
    p.requests = o.requests;
    p.duration_ns = duration_ns;
    p.drain_timeout_ns = *timeout;
    p.seed = o.seed + i * 7919;
    p.first_workload_index = static_cast<int64_t>(i) * kMaxScheduled;
    p.api_key = o.api_key;
    double expected = 0;
    if (!o.rates.empty()) {
      p.mode = LoadMode::kOpenLoop;
      p.rate_per_s = o.rates[i];
      p.burstiness = o.burstiness;
      p.streams = o.streams;
      expected = o.requests > 0 ? static_cast<double>(o.requests)
                                : p.rate_per_s * static_cast<double>(duration_ns) / 1e9;
    } else {
      p.mode = LoadMode::kClosedLoop;
      p.concurrency = o.concurrencies[i];
      expected = o.requests > 0 ? static_cast<double>(o.requests) : static_cast<double>(p.concurrency);
    }
    p.warmup_requests = o.warmup >= 0 ? o.warmup : std::min<int64_t>(20, static_cast<int64_t>(expected / 10));
    if (absl::Status s = ValidateLoadPoint(p); !s.ok()) return absl::InvalidArgumentError(StrCat("bench: ", s.message()));
    points.push_back(p);
  }

  RunParameters params;
  params.url = o.url;
  params.model = model;
  params.workload = (*workload)->name();
  params.slo = o.slo;
  params.targets = slo;
  params.prompt_tokens = prompt->ToString();
  params.output_tokens = output->ToString();
  params.streams = o.streams;
  params.languages = o.workload == "live-comments" ? o.languages : 1;
  params.shared_prefix_words = o.shared_prefix_words;
  params.burstiness = o.burstiness;
  params.started_utc = UtcNow();
  params.client_machine = o.client_machine;
  std::printf("swiftlet bench: %s, model %s, workload %s, prompt %s words%s, %s output tokens, targets %s\n",
              o.url.c_str(), model.c_str(), params.workload.c_str(), params.prompt_tokens.c_str(),
              o.shared_prefix_words > 0 ? StrCat(" after ", o.shared_prefix_words, " shared").c_str() : "",
              params.output_tokens.c_str(), o.slo.c_str());
  std::printf("client: %s\n", params.client_machine.c_str());
  std::fflush(stdout);

  std::vector<PointResult> results;
  std::vector<PointSummary> summaries;
  for (const LoadPoint& p : points) {
    const std::string label = PointLabel(p);
    std::fprintf(stderr, "swiftlet bench: %s\n", label.c_str());
    results.push_back(RunLoadPoint(client, **workload, p, SystemClock(), SystemSleep(),
                                          ProgressBar(label)));
    summaries.push_back(SummarizePoint(results.back(), slo));
    std::printf("%s", FormatPointText(summaries.back()).c_str());
    std::fflush(stdout);
  }
  std::printf("\n%s", FormatSweepTable(summaries).c_str());

  if (!o.json_path.empty()) {
    if (absl::Status s = WriteFile(o.json_path, ReportJson(params, summaries, results)); !s.ok()) {
      return absl::DataLossError(StrCat("--json: ", s.message()));
    }
  }
  if (!o.html_path.empty()) {
    if (absl::Status s = WriteFile(o.html_path, ReportHtml(params, summaries, results)); !s.ok()) {
      return absl::DataLossError(StrCat("--html: ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace swiftlet::loadgen
