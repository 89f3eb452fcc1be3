// A timed byte stream to one target: what each probe attempt runs on.
//
// The probe measures with blocking sockets on its own thread (no event
// loop between the kernel and the clock), one attempt at a time, so each
// figure is the link's and not a scheduler's. Plain TCP is here; TLS
// (issue 24) is a second Transport made by Connect for https targets, whose
// handshake time goes into ConnectTimes::tls_ns.
//
// Threads: a Transport is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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
  int64_t start_ns = 0;    // Before the socket was made (steady clock).
  int64_t connect_ns = 0;  // Start to TCP connected.
  int64_t tls_ns = -1;     // TLS handshake; -1: none (http).
};

// Opens a transport: TCP, then TLS for https (not yet: Unimplemented).
absl::StatusOr<std::unique_ptr<Transport>> Connect(const ResolvedTarget& target, int64_t deadline_ns,
                                                   ConnectTimes* times);

// The steady clock the probe measures with, in ns (core/clock.h's scale).
int64_t NowNs();

}  // namespace swiftlet::probe
