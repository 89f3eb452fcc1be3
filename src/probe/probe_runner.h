// swiftlet probe's measurements of one target, attempt by attempt on the
// calling thread, each attempt on a fresh connection so every sample pays
// the link's connect as a new user would:
//
//   connect  start (before the socket) to TCP connected
//   tls      the TLS handshake alone (https), after the TCP connect
//   ttfb     start to the first byte of GET /health's answer (curl's
//            time_starttransfer)
//   ttft     start to the first token event of POST /v1/completions
//            {"max_tokens": 1, "stream": true}
//   download GET /probe/download?bytes=N: bytes over the time from its
//            first body byte to its last, in Mbps
//
// An attempt that fails (connect error, timeout, a status other than 200,
// an error event) counts towards loss and gives no sample.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "probe/sample_stats.h"
#include "probe/target.h"

namespace swiftlet::probe {

struct ProbeOptions {
  int samples = 10;
  int64_t interval_ns = 100'000'000;  // Between samples.
  int64_t timeout_ns = 2'000'000'000;  // Per attempt.
  bool completion = true;              // Measure ttft.
  std::string model;                   // Sent with the completion if set.
  std::string api_key;                 // Bearer token, if the target wants one.
  double download_mb = 0;              // 0: no throughput test.
  int64_t download_timeout_ns = 120'000'000'000;
  // https targets: PEM file of the authorities their certificates must
  // chain to; empty: the system's trust store (transport.h's TlsContext).
  std::string ca_file;
};

struct DownloadResult {
  uint64_t bytes = 0;
  double seconds = 0;  // First body byte to last.
  double mbps = 0;
  std::string error;   // Empty when it succeeded.
};

struct TargetResult {
  Target target;
  std::string error;  // Set when the target could not be probed at all (resolution, a bad CA file).
  Samples connect, tls, ttfb, ttft;
  std::optional<DownloadResult> download;
};

TargetResult ProbeTarget(const Target& target, const ProbeOptions& options);

// The sizing rule of the seeds: seconds to move `gigabytes` at `mbps`
// (GB x 8000 / Mbps).
double TransferSeconds(double gigabytes, double mbps);

// The largest download --download-mb accepts (and the server serves).
inline constexpr double kMaxDownloadMb = 1024;

}  // namespace swiftlet::probe
