// What the gateway adds to a request's latency: the same request sent at a
// fixed rate straight to a site and, interleaved, through a gateway in
// front of it; p50/p90/p99 of both and their difference. Not a test (a
// benchmark prints numbers, it asserts none): docs/PERFORMANCE.md.
//
//   gateway_overhead_bench --direct http://127.0.0.1:8080
//       --gateway http://127.0.0.1:8090 [--rate 500] [--seconds 20]
//       [--path /v1/models] [--warmup 2]
//
// Each path gets `rate` requests per second, the two half a period apart,
// on keep-alive connections of one client per path; latency is from the
// send to the whole answer.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "http/client.h"

namespace {

struct Target {
  std::string host;
  uint16_t port = 0;
};

bool ParseUrl(const std::string& url, Target& t) {
  if (url.rfind("http://", 0) != 0) return false;
  const std::string rest = url.substr(7);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return false;
  t.host = rest.substr(0, colon);
  t.port = static_cast<uint16_t>(std::atoi(rest.substr(colon + 1).c_str()));
  return t.port != 0;
}

struct Recorder {
  std::mutex mu;
  std::vector<double> ms;
  int errors = 0;
  int in_flight = 0;
};

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p / 100 * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  std::string direct_url, gateway_url, path = "/v1/models";
  double rate = 500, seconds = 20, warmup = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--direct") direct_url = v;
    else if (k == "--gateway") gateway_url = v;
    else if (k == "--rate") rate = std::atof(v.c_str());
    else if (k == "--seconds") seconds = std::atof(v.c_str());
    else if (k == "--warmup") warmup = std::atof(v.c_str());
    else if (k == "--path") path = v;
  }
  Target direct, gateway;
  if (!ParseUrl(direct_url, direct) || !ParseUrl(gateway_url, gateway) || rate <= 0 || seconds <= 0) {
    std::fprintf(stderr, "usage: %s --direct http://H:P --gateway http://H:P [--rate R] [--seconds S] [--path P]\n",
                 argv[0]);
    return 2;
  }
  auto make = [](const Target& t) {
    swiftlet::http::HttpClientOptions o;
    o.host = t.host;
    o.port = t.port;
    o.idle_timeout = std::chrono::seconds(10);
    return std::make_unique<swiftlet::http::HttpClient>(o);
  };
  auto direct_client = make(direct), gateway_client = make(gateway);
  Recorder direct_rec, gateway_rec;
  const swiftlet::Clock& clock = swiftlet::SystemClock();
  const int64_t period = static_cast<int64_t>(1e9 / rate);
  const int64_t start = clock.NowNs() + 100'000'000;
  const int64_t measure_from = start + static_cast<int64_t>(warmup * 1e9);
  const int64_t end = measure_from + static_cast<int64_t>(seconds * 1e9);
  auto send = [&](swiftlet::http::HttpClient& client, Recorder& rec, bool counted) {
    swiftlet::http::ClientRequest r;
    r.method = "GET";
    r.target = path;
    const int64_t sent = clock.NowNs();
    {
      std::lock_guard<std::mutex> lock(rec.mu);
      ++rec.in_flight;
    }
    swiftlet::http::ClientCallbacks cb;
    cb.on_done = [&rec, &clock, sent, counted](absl::Status s, swiftlet::http::ClientResponse resp) {
      const double ms = static_cast<double>(clock.NowNs() - sent) / 1e6;
      std::lock_guard<std::mutex> lock(rec.mu);
      --rec.in_flight;
      if (!counted) return;
      if (!s.ok() || resp.status != 200) {
        ++rec.errors;
      } else {
        rec.ms.push_back(ms);
      }
    };
    client.Send(std::move(r), std::move(cb));
  };
  auto sleep = swiftlet::SystemSleep();
  for (int64_t t = start; t < end; t += period) {
    const bool counted = t >= measure_from;
    sleep(t);
    send(*direct_client, direct_rec, counted);
    sleep(t + period / 2);
    send(*gateway_client, gateway_rec, counted);
  }
  // Let the last answers come in.
  for (int i = 0; i < 500; ++i) {
    std::lock_guard<std::mutex> a(direct_rec.mu), b(gateway_rec.mu);
    if (direct_rec.in_flight == 0 && gateway_rec.in_flight == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::lock_guard<std::mutex> a(direct_rec.mu), b(gateway_rec.mu);
  std::printf("GET %s at %.0f req/s per path for %.0f s (after %.0f s warm-up)\n", path.c_str(), rate, seconds,
              warmup);
  std::printf("%-8s %8s %8s %8s %8s %8s %7s\n", "path", "n", "p50 ms", "p90 ms", "p99 ms", "max ms", "errors");
  for (auto* rec : {&direct_rec, &gateway_rec}) {
    std::printf("%-8s %8zu %8.3f %8.3f %8.3f %8.3f %7d\n", rec == &direct_rec ? "direct" : "gateway", rec->ms.size(),
                Pct(rec->ms, 50), Pct(rec->ms, 90), Pct(rec->ms, 99), Pct(rec->ms, 100), rec->errors);
  }
  std::printf("added    p50 %.3f ms, p90 %.3f ms, p99 %.3f ms\n", Pct(gateway_rec.ms, 50) - Pct(direct_rec.ms, 50),
              Pct(gateway_rec.ms, 90) - Pct(direct_rec.ms, 90), Pct(gateway_rec.ms, 99) - Pct(direct_rec.ms, 99));
  return 0;
}
