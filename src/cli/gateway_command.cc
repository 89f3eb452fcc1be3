// swiftlet gateway: the multi-site router's flags, and its signals: SIGINT
// or SIGTERM stop it (answers in flight get --grace), SIGHUP reloads
// --sites FILE (a bad file keeps the sites as they were) and the
// --tls-cert/--tls-key pair (a bad pair keeps the one in use).
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "core/byte_size.h"
#include "core/clock.h"
#include "core/duration.h"
#include "core/str_cat.h"
#include "gateway/gateway.h"
#include "gateway/site_config.h"

namespace swiftlet::cli {
namespace {

struct GatewayFlags {
  std::string listen = "127.0.0.1:8090";
  std::vector<std::string> sites;
  std::string sites_file;
  int io_threads = 2;
  int64_t max_connections = 10000;
  int64_t max_in_flight = 4096;
  int64_t max_websockets = 4096;
  std::string max_body = "8MiB";
  int max_attempts = 3;
  std::string max_hold = "1s";
  std::string poll_interval = "1s";
  std::string poll_timeout = "500ms";
  int eject_after = 3;
  int readmit_after = 2;
  int breaker_failures = 3;
  std::string breaker_open = "5s";
  std::string in_flight_penalty = "5ms";
  std::string connect_timeout = "2s";
  std::string upstream_timeout = "120s";
  std::string grace = "10s";
  std::string ca_file;   // Authorities for https sites; empty: the system's.
  std::string tls_cert;  // The gateway's own HTTPS (with tls_key).
  std::string tls_key;
};

absl::StatusOr<int64_t> DurationFlag(const std::string& flag, const std::string& text, int64_t min_ns,
                                     int64_t max_ns) {
  auto ns = ParseDuration(text);
  if (!ns.ok()) return absl::InvalidArgumentError(StrCat(flag, ": ", ns.status().message()));
  if (*ns < min_ns || *ns > max_ns) {
    return absl::InvalidArgumentError(StrCat(flag, ": out of range (", text, ")"));
  }
  return *ns;
}

std::chrono::milliseconds Millis(int64_t ns) { return std::chrono::milliseconds(ns / kNsPerMs); }

absl::StatusOr<std::vector<gateway::SiteSpec>> ReadSites(const GatewayFlags& f) {
  if (!f.sites_file.empty() && !f.sites.empty()) {
    return absl::InvalidArgumentError("give either --site flags or --sites FILE, not both");
  }
  if (!f.sites_file.empty()) return gateway::LoadSitesFile(f.sites_file);
  std::vector<gateway::SiteSpec> out;
  for (const std::string& s : f.sites) {
    SWIFTLET_ASSIGN_OR_RETURN(gateway::SiteSpec spec, gateway::ParseSiteFlag(s));
    out.push_back(std::move(spec));
  }
  SWIFTLET_RETURN_IF_ERROR(gateway::CheckSiteList(out));
  return out;
}

absl::Status ParseListen(const std::string& listen, gateway::GatewayOptions& o) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return absl::InvalidArgumentError("--listen: expected HOST:PORT");
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) return absl::InvalidArgumentError("--listen: expected HOST:PORT");
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1) port = -1;
  } catch (...) {
    port = -1;
  }
  if (port < 0 || port > 65535) return absl::InvalidArgumentError("--listen: port must be 0..65535");
  o.host = host;
  o.port = static_cast<uint16_t>(port);
  return absl::OkStatus();
}

int RunGateway(const GatewayFlags& f) {
  gateway::GatewayOptions o;
  if (absl::Status s = ParseListen(f.listen, o); !s.ok()) return ReportError(s);
  auto sites = ReadSites(f);
  if (!sites.ok()) return ReportError(sites.status());
  auto max_body = ParseByteSize(f.max_body);
  if (!max_body.ok()) return ReportError(StrCat("--max-body: ", max_body.status().message()));
  if (*max_body < 1024 || *max_body > (uint64_t{1} << 30)) return ReportError("--max-body: 1KiB..1GiB");
  constexpr int64_t ms = kNsPerMs, s = kNsPerSecond;
  auto interval = DurationFlag("--poll-interval", f.poll_interval, 50 * ms, 60 * s);
  auto poll_timeout = DurationFlag("--poll-timeout", f.poll_timeout, 10 * ms, 60 * s);
  auto breaker_open = DurationFlag("--breaker-open", f.breaker_open, 100 * ms, 3600 * s);
  auto penalty = DurationFlag("--in-flight-penalty", f.in_flight_penalty, 1, 60 * s);
  auto connect = DurationFlag("--connect-timeout", f.connect_timeout, 10 * ms, 60 * s);
  auto upstream = DurationFlag("--upstream-timeout", f.upstream_timeout, 100 * ms, 24 * 3600 * s);
  auto grace = DurationFlag("--grace", f.grace, 1, 3600 * s);
  auto max_hold = f.max_hold == "0" ? absl::StatusOr<int64_t>(0) : DurationFlag("--max-hold", f.max_hold, 1, 60 * s);
  for (const auto* d : {&max_hold, &interval, &poll_timeout, &breaker_open, &penalty, &connect, &upstream, &grace}) {
    if (!d->ok()) return ReportError(d->status());
  }
  o.io_threads = f.io_threads;
  o.max_connections = static_cast<size_t>(f.max_connections);
  o.max_in_flight = static_cast<size_t>(f.max_in_flight);
  o.max_websockets = static_cast<size_t>(f.max_websockets);
  o.max_body_bytes = *max_body;
  o.max_attempts = f.max_attempts;
  o.max_hold = Millis(*max_hold);
  o.poll_interval = Millis(*interval);
  o.clients.poll_timeout = Millis(*poll_timeout);
  o.clients.connect_timeout = Millis(*connect);
  o.clients.upstream_idle_timeout = Millis(*upstream);
  o.health.eject_after_failures = f.eject_after;
  o.health.readmit_after_successes = f.readmit_after;
  o.health.breaker_failures = f.breaker_failures;
  o.health.breaker_open_ns = *breaker_open;
  o.health.in_flight_penalty_ms = static_cast<double>(*penalty) / kNsPerMs;
  o.clients.ca_file = f.ca_file;
  o.tls_cert_file = f.tls_cert;
  o.tls_key_file = f.tls_key;

  // Signals go to the thread that waits for them: blocked before any
  // other thread starts, so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  gateway::Gateway gw(o);
  if (absl::Status st = gw.Start(*sites); !st.ok()) return ReportError(st);
  const bool v6 = o.host.find(':') != std::string::npos;
  std::printf("swiftlet: gateway for %zu sites on %s://%s%s%s:%u\n", sites->size(), gw.tls() ? "https" : "http",
              v6 ? "[" : "", o.host.c_str(), v6 ? "]" : "", gw.port());
  std::fflush(stdout);

  while (true) {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    if (signal_number != SIGHUP) break;
    if (gw.tls()) {
      const absl::Status st = gw.ReloadTls();
      std::fprintf(stderr, "swiftlet: SIGHUP: TLS certificate %s%.*s\n", st.ok() ? "reloaded" : "kept: ",
                   static_cast<int>(st.message().size()), st.message().data());
    }
    if (f.sites_file.empty()) {
      std::fprintf(stderr, "swiftlet: SIGHUP: no --sites file to reload; sites unchanged\n");
      continue;
    }
    auto reloaded = gateway::LoadSitesFile(f.sites_file);
    absl::Status st = reloaded.ok() ? gw.ReplaceSites(*reloaded) : reloaded.status();
    if (st.ok()) {
      std::fprintf(stderr, "swiftlet: SIGHUP: %zu sites from %s\n", reloaded->size(), f.sites_file.c_str());
    } else {
      gw.CountReloadError();
      std::fprintf(stderr, "swiftlet: SIGHUP: sites unchanged: %.*s\n", static_cast<int>(st.message().size()),
                   st.message().data());
    }
  }
  std::fprintf(stderr, "swiftlet: gateway stopping (grace %s)\n", f.grace.c_str());
  gw.Stop(Millis(*grace));
  std::fprintf(stderr, "swiftlet: stopped\n");
  return 0;
}

}  // namespace

Command AddGatewayCommand(CLI::App& parent) {
  auto f = std::make_shared<GatewayFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "gateway", "Route the API across several sites: latency-aware choice, health, failover, stream affinity");
  cmd->add_option("--listen", f->listen, "Address to listen on, HOST:PORT (default 127.0.0.1:8090; port 0: any)");
  cmd->add_option("--site", f->sites,
                  "A site, NAME=http://HOST:PORT or NAME=https://HOST:PORT (repeat for each site)");
  cmd->add_option("--sites", f->sites_file, "File of sites, one 'NAME URL' per line; reloaded on SIGHUP");
  cmd->add_option("--io-threads", f->io_threads, "HTTP I/O threads (default 2)")->check(CLI::Range(1, 64));
  cmd->add_option("--max-connections", f->max_connections, "Client connections at most (default 10000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-in-flight", f->max_in_flight, "Proxied requests at once at most; past it 503 (default 4096)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-websockets", f->max_websockets, "Live streams relayed at once at most (default 4096)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-body", f->max_body, "Request body size at most (default 8MiB)");
  cmd->add_option("--max-attempts", f->max_attempts, "Sites one request may try before its first byte (default 3)")
      ->check(CLI::Range(1, 16));
  cmd->add_option("--max-hold", f->max_hold,
                  "When every site is benched by a short Retry-After, a request may wait this long in the "
                  "gateway for the first to free up (default 1s; 0: refuse at once)");
  cmd->add_option("--poll-interval", f->poll_interval, "Health poll period per site (default 1s)");
  cmd->add_option("--poll-timeout", f->poll_timeout, "A health poll fails past this (default 500ms)");
  cmd->add_option("--eject-after", f->eject_after, "Failed polls in a row that eject a site (default 3)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--readmit-after", f->readmit_after, "Good polls in a row that readmit it (default 2)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--breaker-failures", f->breaker_failures,
                  "Failed requests in a row that open a site's circuit breaker (default 3)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--breaker-open", f->breaker_open,
                  "An open breaker's shortest time; it then needs a good poll and a good trial (default 5s)");
  cmd->add_option("--in-flight-penalty", f->in_flight_penalty,
                  "Added to a site's score per request in flight there (default 5ms)");
  cmd->add_option("--connect-timeout", f->connect_timeout, "Connecting to a site (default 2s)");
  cmd->add_option("--upstream-timeout", f->upstream_timeout,
                  "Longest silence from a site during a request, first token included (default 120s)");
  cmd->add_option("--grace", f->grace, "On SIGINT/SIGTERM, time for answers in flight (default 10s)");
  cmd->add_option("--ca", f->ca_file,
                  "https sites: PEM file of the certificate authorities to trust (default: the system's)");
  cmd->add_option("--tls-cert", f->tls_cert,
                  "Serve HTTPS (and wss) to clients with this PEM certificate chain (needs --tls-key); "
                  "SIGHUP reads it again");
  cmd->add_option("--tls-key", f->tls_key, "PEM private key of --tls-cert (unencrypted)");
  return {cmd, [f] { return RunGateway(*f); }};
}

}  // namespace swiftlet::cli
