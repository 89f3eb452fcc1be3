// Transport over a plain TCP socket (POSIX): non-blocking connect bounded
// by poll(), then reads and writes each bounded by the same deadline; for
// https the TLS handshake follows (tls_transport.cc), timed on its own.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/clock.h"
#include "core/str_cat.h"
#include "probe/tcp_transport.h"

namespace swiftlet::probe {
namespace {

int PollMs(int64_t deadline_ns) {
  const int64_t left = deadline_ns - NowNs();
  if (left <= 0) return 0;
  // Round up: poll(0) would spin on the last sub-millisecond.
  return static_cast<int>(std::min<int64_t>((left + 999'999) / 1'000'000, 60'000));
}

}  // namespace

absl::Status WaitFor(int fd, short events, int64_t deadline_ns, const char* what) {
  while (true) {
    pollfd p{fd, events, 0};
    const int timeout = PollMs(deadline_ns);
    const int n = ::poll(&p, 1, timeout);
    if (n > 0) return absl::OkStatus();
    if (n == 0) {
      if (NowNs() >= deadline_ns) return absl::DeadlineExceededError(StrCat(what, ": timed out"));
      continue;
    }
    if (errno != EINTR) return absl::UnavailableError(StrCat(what, ": poll: ", std::strerror(errno)));
  }
}

TcpTransport::~TcpTransport() { ::close(fd_); }

absl::Status TcpTransport::Write(std::string_view data, int64_t deadline_ns) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      SWIFTLET_RETURN_IF_ERROR(WaitFor(fd_, POLLOUT, deadline_ns, "send"));
      continue;
    }
    return absl::UnavailableError(StrCat("send: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> TcpTransport::Read(char* buffer, size_t max, int64_t deadline_ns) {
  while (true) {
    const ssize_t n = ::recv(fd_, buffer, max, 0);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      SWIFTLET_RETURN_IF_ERROR(WaitFor(fd_, POLLIN, deadline_ns, "receive"));
      continue;
    }
    return absl::UnavailableError(StrCat("receive: ", std::strerror(errno)));
  }
}

int64_t NowNs() { return SystemClock().NowNs(); }

absl::StatusOr<ResolvedTarget> Resolve(const Target& target) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const std::string port = StrCat(target.port);
  const int rc = ::getaddrinfo(target.host.c_str(), port.c_str(), &hints, &result);
  if (rc != 0 || result == nullptr) {
    return absl::UnavailableError(StrCat("cannot resolve ", target.host, ": ", ::gai_strerror(rc)));
  }
  ResolvedTarget r;
  r.target = target;
  r.family = result->ai_family;
  r.addr_len = std::min<unsigned>(static_cast<unsigned>(result->ai_addrlen), sizeof(r.addr));
  std::memcpy(r.addr, result->ai_addr, r.addr_len);
  ::freeaddrinfo(result);
  return r;
}

absl::StatusOr<std::unique_ptr<Transport>> Connect(const ResolvedTarget& target, const TlsContext* tls,
                                                   int64_t deadline_ns, ConnectTimes* times) {
  const bool https = target.target.scheme == Scheme::kHttps;
  if (https && tls == nullptr) return absl::FailedPreconditionError("an https target needs a TLS context");
  ConnectTimes t;
  t.start_ns = NowNs();
  const int fd = ::socket(target.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(StrCat("socket: ", std::strerror(errno)));
  auto transport = std::make_unique<TcpTransport>(fd);  // Owns fd from here.
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(target.addr), target.addr_len) != 0) {
    if (errno != EINPROGRESS) {
      return absl::UnavailableError(StrCat("connect to ", target.target.url, ": ", std::strerror(errno)));
    }
    SWIFTLET_RETURN_IF_ERROR(WaitFor(fd, POLLOUT, deadline_ns, "connect"));
    int error = 0;
    socklen_t len = sizeof(error);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) {
      return absl::UnavailableError(StrCat("connect to ", target.target.url, ": ", std::strerror(error)));
    }
  }
  t.connect_ns = NowNs() - t.start_ns;
  if (times != nullptr) *times = t;
  if (!https) return std::unique_ptr<Transport>(std::move(transport));
  // connect_ns stays the TCP connect alone, as for http targets; the
  // handshake is timed apart.
  auto secure =
      StartTls(std::move(transport), *tls, target.target.host, target.target.url, deadline_ns, &t.tls_ns);
  if (!secure.ok()) return secure.status();
  if (times != nullptr) *times = t;
  return secure;
}

}  // namespace swiftlet::probe
