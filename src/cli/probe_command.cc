// swiftlet probe: link tests against one or more sites (probe/probe_runner.h).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "core/clock.h"
#include "core/duration.h"
#include "core/str_cat.h"
#include "probe/probe_report.h"
#include "probe/probe_runner.h"
#include "probe/target.h"

namespace swiftlet::cli {
namespace {

struct ProbeFlags {
  std::vector<std::string> urls;
  int samples = 10;
  std::string interval = "100ms";
  std::string timeout = "2s";
  bool no_completion = false;
  std::string model;
  std::string api_key;
  double download_mb = 0;
  bool json = false;
  std::string ca_file;
};

int RunProbe(const ProbeFlags& f) {
  probe::ProbeOptions o;
  o.samples = f.samples;
  auto interval = ParseDuration(f.interval);
  if (!interval.ok() && f.interval != "0") return ReportError(StrCat("--interval: ", interval.status().message()));
  o.interval_ns = interval.ok() ? *interval : 0;
  if (o.interval_ns > 60 * kNsPerSecond) return ReportError("--interval: at most 60s");
  auto timeout = ParseDuration(f.timeout);
  if (!timeout.ok()) return ReportError(StrCat("--timeout: ", timeout.status().message()));
  if (*timeout < kNsPerMs || *timeout > 600 * kNsPerSecond) return ReportError("--timeout: 1ms..600s");
  o.timeout_ns = *timeout;
  o.completion = !f.no_completion;
  o.model = f.model;
  o.api_key = f.api_key;
  o.download_mb = f.download_mb;
  o.ca_file = f.ca_file;
  std::vector<probe::Target> targets;
  for (const std::string& url : f.urls) {
    auto t = probe::ParseTarget(url);
    if (!t.ok()) return ReportError(t.status());
    targets.push_back(*t);
  }
  std::vector<probe::TargetResult> results;
  for (const probe::Target& t : targets) results.push_back(probe::ProbeTarget(t, o));
  const std::string out = f.json ? probe::FormatJson(results, o) : probe::FormatText(results, o);
  std::fwrite(out.data(), 1, out.size(), stdout);
  // Exit 1 when some target could not be measured at all (for https: no
  // handshake succeeded either), so scripts notice.
  for (const probe::TargetResult& r : results) {
    if (!r.error.empty() || r.connect.values_ms.empty()) return 1;
    if (r.target.scheme == probe::Scheme::kHttps && r.tls.values_ms.empty()) return 1;
  }
  return 0;
}

}  // namespace

Command AddProbeCommand(CLI::App& parent) {
  auto f = std::make_shared<ProbeFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "probe", "Measure the links to sites: connect, TTFB, TTFT percentiles, jitter, loss, throughput");
  cmd->add_option("urls", f->urls, "Targets, http://HOST:PORT or https://HOST:PORT")->required();
  cmd->add_option("--samples", f->samples, "Attempts per measurement (default 10)")->check(CLI::Range(1, 100000));
  cmd->add_option("--interval", f->interval, "Pause between samples (default 100ms)");
  cmd->add_option("--timeout", f->timeout, "Per attempt; past it the attempt counts as lost (default 2s)");
  cmd->add_flag("--no-completion", f->no_completion, "Skip the time-to-first-token test");
  cmd->add_option("--model", f->model, "Model name for the completion (default: the server's)");
  cmd->add_option("--api-key", f->api_key, "Bearer token, if the sites want one");
  cmd->add_option("--download-mb", f->download_mb,
                  "Throughput test: download this many MiB from /probe/download (default off)")
      ->check(CLI::Range(0.0, probe::kMaxDownloadMb));
  cmd->add_option("--ca", f->ca_file,
                  "https targets: PEM file of the certificate authorities to trust (default: the system's)");
  cmd->add_flag("--json", f->json, "Print JSON instead of a table");
  return {cmd, [f] { return RunProbe(*f); }};
}

}  // namespace swiftlet::cli
