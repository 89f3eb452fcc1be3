#include "raw_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace swiftlet::http::testing {
namespace {

using Clock = std::chrono::steady_clock;

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

RawSocket& RawSocket::operator=(RawSocket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

RawSocket::~RawSocket() { Close(); }

RawSocket RawSocket::Connect(uint16_t port, int receive_buffer) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return RawSocket();
  if (receive_buffer > 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return RawSocket();
  }
  return RawSocket(fd);
}

bool RawSocket::Send(std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void RawSocket::ShutdownWrite() { ::shutdown(fd_, SHUT_WR); }

void RawSocket::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string RawSocket::ReadUntil(std::string_view needle, milliseconds timeout) {
  std::string data;
  auto deadline = Clock::now() + timeout;
  while (data.find(needle) == std::string::npos) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, MillisLeft(deadline)) <= 0) break;
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  return data;
}

std::string RawSocket::ReadSome(size_t max, milliseconds timeout) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return "";
  std::string data(max, '\0');
  ssize_t n = ::recv(fd_, data.data(), max, 0);
  data.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return data;
}

bool RawSocket::ReadUntilClosed(milliseconds timeout, std::string* data) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, MillisLeft(deadline)) <= 0) return false;
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // EOF or reset.
    if (data != nullptr) data->append(buf, static_cast<size_t>(n));
  }
}

RawListener::RawListener() {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd_, 16) != 0) {
    std::abort();
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
}

RawListener::~RawListener() { ::close(fd_); }

RawSocket RawListener::Accept(milliseconds timeout) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return RawSocket();
  return RawSocket(::accept(fd_, nullptr, nullptr));
}

ParsedResponse ParseResponse(std::string_view bytes, size_t* consumed) {
  ParsedResponse r;
  size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string_view::npos || bytes.substr(0, 9).find("HTTP/1.") != 0) return r;
  r.head = std::string(bytes.substr(0, head_end + 4));
  r.status = std::atoi(std::string(bytes.substr(9, 3)).c_str());
  size_t pos = head_end + 4;
  // Header lookup, by hand.
  long content_length = -1;
  bool chunked = false;
  size_t line = r.head.find("\r\n") + 2;
  while (line < head_end) {
    size_t eol = r.head.find("\r\n", line);
    std::string_view field(r.head.data() + line, eol - line);
    size_t colon = field.find(':');
    std::string_view name = field.substr(0, colon);
    std::string_view value = field.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (IEquals(name, "content-length")) content_length = std::atol(std::string(value).c_str());
    if (IEquals(name, "transfer-encoding") && IEquals(value, "chunked")) chunked = true;
    line = eol + 2;
  }
  bool no_body = r.status == 100 || r.status == 204 || r.status == 304;
  if (no_body || (!chunked && content_length <= 0)) {
    r.complete = no_body || content_length == 0;
  } else if (!chunked) {
    if (bytes.size() - pos < static_cast<size_t>(content_length)) return r;
    r.body = std::string(bytes.substr(pos, static_cast<size_t>(content_length)));
    pos += static_cast<size_t>(content_length);
    r.complete = true;
  } else {
    while (true) {
      size_t eol = bytes.find("\r\n", pos);
      if (eol == std::string_view::npos) return r;
      size_t size = std::strtoul(std::string(bytes.substr(pos, eol - pos)).c_str(), nullptr, 16);
      pos = eol + 2;
      if (size == 0) {
        if (bytes.substr(pos, 2) != "\r\n") return r;
        pos += 2;
        r.complete = true;
        break;
      }
      if (bytes.size() < pos + size + 2) return r;
      r.body.append(bytes.substr(pos, size));
      pos += size + 2;
    }
  }
  if (consumed != nullptr) *consumed = pos;
  return r;
}

ParsedResponse ReadResponse(RawSocket& socket, milliseconds timeout, std::string* rest) {
  std::string data = rest != nullptr ? *rest : std::string();
  auto deadline = Clock::now() + timeout;
  while (true) {
    size_t consumed = 0;
    ParsedResponse r = ParseResponse(data, &consumed);
    if (r.complete) {
      if (rest != nullptr) *rest = data.substr(consumed);
      return r;
    }
    pollfd p{socket.fd(), POLLIN, 0};
    if (::poll(&p, 1, MillisLeft(deadline)) <= 0) return r;
    char buf[4096];
    ssize_t n = ::recv(socket.fd(), buf, sizeof(buf), 0);
    if (n <= 0) return r;
    data.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace swiftlet::http::testing
