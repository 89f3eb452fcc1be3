// A timed byte stream to one target: what each probe attempt runs on.
//
// The probe measures with blocking sockets on its own thread (no event
// loop between the kernel and the clock), one attempt at a time, so each
// figure is the link's and not a scheduler's. Plain TCP (tcp_transport.cc),
// and for https targets TLS over it (tls_transport.cc, OpenSSL on the same
// socket), whose handshake is timed apart: ConnectTimes::connect_ns is the
// TCP connect alone, ConnectTimes::tls_ns the handshake alone.
//
// Threads: a Transport is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "probe/target.h"

namespace swiftlet::probe {

class Transport {
 public:
  virtual ~Transport() = default;
  // Writes all of `data` or fails (Unavailable; DeadlineExceeded past
  // `deadline_ns`, a steady-clock time).
  virtual absl::Status Write(std::string_view data, int64_t deadline_ns) = 0;
  // Waits for and reads up to `max` bytes into `buffer`; 0 means the peer
  // closed. DeadlineExceeded past `deadline_ns`.
  virtual absl::StatusOr<size_t> Read(char* buffer, size_t max, int64_t deadline_ns) = 0;
};

// A resolved address, so name lookup is not counted in connect times (the
// probe measures the link; resolution is the resolver's business).
struct ResolvedTarget {
  Target target;
  int family = 0;            // AF_INET / AF_INET6
  unsigned char addr[28]{};  // sockaddr_in or sockaddr_in6
  unsigned addr_len = 0;
};

absl::StatusOr<ResolvedTarget> Resolve(const Target& target);

struct ConnectTimes {
  int64_t start_ns = 0;     // Before the socket was made (steady clock).
  int64_t connect_ns = -1;  // Start to TCP connected; -1: TCP did not connect.
  int64_t tls_ns = -1;      // The TLS handshake alone; -1: none (http, or it failed).
};

// What https connections trust and require: TLS 1.2 or 1.3 (ECDHE with
// AEAD ciphers for 1.2), a certificate chain that verifies against the
// authorities, and the target's host in the certificate (a DNS name, sent
// as SNI, or an IP address in its IP SANs). Immutable once made; made once
// per target and shared by its attempts, each of which does a full
// handshake (no session resumption: every sample pays what a new user
// pays). Defined in tls_transport.cc.
class TlsContext;

// `ca_file`: PEM file of the authorities to trust; empty: the system's
// trust store. InvalidArgument naming the file and the problem.
absl::StatusOr<std::shared_ptr<const TlsContext>> MakeTlsContext(const std::string& ca_file);

// Opens a transport: TCP, then for https a TLS handshake with `tls` (which
// https targets need; FailedPrecondition without it). `times`, if given,
// gets what was measured, also when the TLS handshake failed after TCP
// connected (then connect_ns is set and the error names the handshake).
absl::StatusOr<std::unique_ptr<Transport>> Connect(const ResolvedTarget& target, const TlsContext* tls,
                                                   int64_t deadline_ns, ConnectTimes* times);

// The steady clock the probe measures with, in ns (core/clock.h's scale).
int64_t NowNs();

}  // namespace swiftlet::probe
