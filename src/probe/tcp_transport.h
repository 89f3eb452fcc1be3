// Internal to probe/: the plain TCP transport and its deadline wait, which
// the TLS transport (tls_transport.cc) runs on, and the TLS handshake that
// Connect calls for https targets.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "probe/transport.h"

namespace swiftlet::probe {

// Waits for `events` (poll(2)) on fd until the deadline: OK,
// DeadlineExceeded ("WHAT: timed out"), or Unavailable for a poll error.
absl::Status WaitFor(int fd, short events, int64_t deadline_ns, const char* what);

// A connected, non-blocking TCP socket; owns (closes) the descriptor.
class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(int fd) : fd_(fd) {}
  ~TcpTransport() override;
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  absl::Status Write(std::string_view data, int64_t deadline_ns) override;
  absl::StatusOr<size_t> Read(char* buffer, size_t max, int64_t deadline_ns) override;

  int fd() const { return fd_; }

 private:
  const int fd_;
};

// The TLS client handshake over `tcp` (connected) for `host` (checked
// against the certificate; SNI unless it is an IP address), bounded by the
// deadline. The transport returned owns `tcp`. `handshake_ns` gets the
// handshake's duration alone (first ClientHello to Finished; the set-up
// before it is not counted). Unavailable naming `url` and why on failure
// ("certificate verify failed: ..."), DeadlineExceeded past the deadline.
absl::StatusOr<std::unique_ptr<Transport>> StartTls(std::unique_ptr<TcpTransport> tcp, const TlsContext& tls,
                                                    const std::string& host, const std::string& url,
                                                    int64_t deadline_ns, int64_t* handshake_ns);

}  // namespace swiftlet::probe
