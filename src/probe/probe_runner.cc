#include "probe/probe_runner.h"

#include <chrono>
#include <cmath>
#include <thread>

#include "core/str_cat.h"
#include "http/sse_parser.h"
#include "probe/http_exchange.h"
#include "probe/transport.h"

namespace swiftlet::probe {
namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

std::string HostPort(const Target& t) {
  const bool v6 = t.host.find(':') != std::string::npos;
  return StrCat(v6 ? "[" : "", t.host, v6 ? "]" : "", ":", t.port);
}

http::Headers BaseHeaders(const ProbeOptions& o) {
  http::Headers h{{"User-Agent", "swiftlet-probe"}, {"Connection", "close"}};
  if (!o.api_key.empty()) h.Add("Authorization", StrCat("Bearer ", o.api_key));
  return h;
}

// One GET /health on a fresh connection: a connect sample and a ttfb
// sample (or a failure for each that did not complete).
void MeasureHealth(const ResolvedTarget& target, const TlsContext* tls, const ProbeOptions& o, TargetResult& r) {
  const int64_t deadline = NowNs() + o.timeout_ns;
  ConnectTimes times;
  auto transport = Connect(target, tls, deadline, &times);
  if (!transport.ok()) {
    const std::string e(transport.status().message());
    // A handshake that failed after TCP connected: the connect counts, the
    // TLS attempt is the one lost.
    if (times.connect_ns >= 0) {
      r.connect.Add(Ms(times.connect_ns));
    } else {
      r.connect.Fail(e);
    }
    if (target.target.scheme == Scheme::kHttps) r.tls.Fail(e);
    r.ttfb.Fail(e);
    return;
  }
  r.connect.Add(Ms(times.connect_ns));
  if (times.tls_ns >= 0) r.tls.Add(Ms(times.tls_ns));
  HttpExchange x(**transport, deadline);
  int64_t first = 0;
  absl::Status s = x.Send("GET", "/health", HostPort(target.target), BaseHeaders(o), "");
  absl::StatusOr<ResponseHead> head = s.ok() ? x.ReadHead(&first) : absl::StatusOr<ResponseHead>(s);
  if (!head.ok()) return r.ttfb.Fail(std::string(head.status().message()));
  if (head->status != 200) return r.ttfb.Fail(StrCat("/health answered ", head->status));
  r.ttfb.Add(Ms(first - times.start_ns));
  // The rest of the small body, so the server sees an orderly exchange.
  (void)x.ReadBody(*head, [](std::string_view) { return true; });
}

// One streamed 1-token completion on a fresh connection: a ttft sample.
void MeasureTtft(const ResolvedTarget& target, const TlsContext* tls, const ProbeOptions& o, TargetResult& r) {
  const int64_t deadline = NowNs() + o.timeout_ns;
  ConnectTimes times;
  auto transport = Connect(target, tls, deadline, &times);
  if (!transport.ok()) return r.ttft.Fail(std::string(transport.status().message()));
  HttpExchange x(**transport, deadline);
  std::string body = R"({"prompt":"Hello","max_tokens":1,"stream":true)";
  if (!o.model.empty()) {
    // The model name is the user's flag: written as a JSON string with the
    // characters JSON needs escaped.
    std::string escaped;
    for (char c : o.model) {
      if (c == '"' || c == '\\') escaped.push_back('\\');
      if (static_cast<unsigned char>(c) < 0x20) continue;
      escaped.push_back(c);
    }
    body += StrCat(R"(,"model":")", escaped, "\"");
  }
  body += "}";
  absl::Status s = x.Send("POST", "/v1/completions", HostPort(target.target), BaseHeaders(o), body);
  absl::StatusOr<ResponseHead> head = s.ok() ? x.ReadHead(nullptr) : absl::StatusOr<ResponseHead>(s);
  if (!head.ok()) return r.ttft.Fail(std::string(head.status().message()));
  if (head->status != 200) return r.ttft.Fail(StrCat("/v1/completions answered ", head->status));
  http::SseParser sse(1 << 20);
  int64_t token_ns = 0;
  std::string error;
  absl::Status parse;
  absl::Status read = x.ReadBody(*head, [&](std::string_view data) {
    parse = sse.Feed(data, [&](const http::SseEvent& e) {
      if (token_ns != 0 || !error.empty() || e.data == "[DONE]") return;
      if (e.data.find("\"error\"") != std::string::npos) {
        error = "the stream carried an error event";
      } else {
        token_ns = NowNs();
      }
    });
    return parse.ok() && token_ns == 0 && error.empty();
  });
  if (token_ns != 0) return r.ttft.Add(Ms(token_ns - times.start_ns));
  if (!error.empty()) return r.ttft.Fail(error);
  if (!parse.ok()) return r.ttft.Fail(std::string(parse.message()));
  r.ttft.Fail(read.ok() ? "the stream ended without a token" : std::string(read.message()));
}

DownloadResult MeasureDownload(const ResolvedTarget& target, const TlsContext* tls, const ProbeOptions& o) {
  DownloadResult d;
  const uint64_t want = static_cast<uint64_t>(std::llround(o.download_mb * 1024 * 1024));
  const int64_t deadline = NowNs() + o.download_timeout_ns;
  auto transport = Connect(target, tls, deadline, nullptr);
  if (!transport.ok()) {
    d.error = std::string(transport.status().message());
    return d;
  }
  HttpExchange x(**transport, deadline);
  absl::Status s = x.Send("GET", StrCat("/probe/download?bytes=", want), HostPort(target.target), BaseHeaders(o), "");
  absl::StatusOr<ResponseHead> head = s.ok() ? x.ReadHead(nullptr) : absl::StatusOr<ResponseHead>(s);
  if (!head.ok()) {
    d.error = std::string(head.status().message());
    return d;
  }
  if (head->status == 404) {
    d.error = "the target has no /probe/download (swiftlet serve provides it)";
    return d;
  }
  if (head->status != 200) {
    d.error = StrCat("/probe/download answered ", head->status);
    return d;
  }
  int64_t first = 0, last = 0;
  uint64_t first_bytes = 0;
  absl::Status read = x.ReadBody(*head, [&](std::string_view data) {
    const int64_t now = NowNs();
    if (first == 0) {
      first = now;
      first_bytes = data.size();
    }
    last = now;
    d.bytes += data.size();
    return true;
  });
  if (!read.ok()) {
    d.error = std::string(read.message());
    return d;
  }
  if (d.bytes != want) {
    d.error = StrCat("got ", d.bytes, " bytes of ", want);
    return d;
  }
  d.seconds = static_cast<double>(last - first) / 1e9;
  // The first read's bytes had arrived before `first` was stamped: the
  // rate counts only what came after it (a single read gives no rate).
  d.mbps = d.seconds > 0 ? static_cast<double>(d.bytes - first_bytes) * 8 / d.seconds / 1e6 : 0;
  return d;
}

}  // namespace

double TransferSeconds(double gigabytes, double mbps) { return mbps > 0 ? gigabytes * 8000 / mbps : 0; }

TargetResult ProbeTarget(const Target& target, const ProbeOptions& o) {
  TargetResult r;
  r.target = target;
  std::shared_ptr<const TlsContext> tls;
  if (target.scheme == Scheme::kHttps) {
    // Once per target, outside every timed step.
    auto made = MakeTlsContext(o.ca_file);
    if (!made.ok()) {
      r.error = std::string(made.status().message());
      return r;
    }
    tls = *std::move(made);
  }
  auto resolved = Resolve(target);
  if (!resolved.ok()) {
    r.error = std::string(resolved.status().message());
    return r;
  }
  for (int i = 0; i < o.samples; ++i) {
    // The interval spaces samples out so they see the link at different
    // moments (it is the sampling period, not a wait for anything).
    if (i > 0 && o.interval_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(o.interval_ns));
    MeasureHealth(*resolved, tls.get(), o, r);
    if (o.completion) MeasureTtft(*resolved, tls.get(), o, r);
  }
  if (o.download_mb > 0) r.download = MeasureDownload(*resolved, tls.get(), o);
  return r;
}

}  // namespace swiftlet::probe
