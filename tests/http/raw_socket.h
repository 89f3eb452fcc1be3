// Blocking POSIX sockets with timeouts, for driving the HTTP server byte by
// byte the way a hostile or plain client would, and for scripting a fake
// server for the client. Test-only; no Boost.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace swiftlet::http::testing {

using std::chrono::milliseconds;

class RawSocket {
 public:
  RawSocket() = default;
  explicit RawSocket(int fd) : fd_(fd) {}
  RawSocket(RawSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  RawSocket& operator=(RawSocket&& other) noexcept;
  ~RawSocket();

  // Connects to 127.0.0.1:port; `receive_buffer` > 0 shrinks SO_RCVBUF first.
  // Returns an invalid socket (valid() false) on failure.
  static RawSocket Connect(uint16_t port, int receive_buffer = 0);

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  // Sends everything; false on error (peer gone).
  bool Send(std::string_view data);
  void ShutdownWrite();
  void Close();

  // Reads until `needle` has been seen, the peer closes, or `timeout`.
  // Returns all bytes read (including any past the needle).
  std::string ReadUntil(std::string_view needle, milliseconds timeout);
  // One read of at most `max` bytes, waiting up to `timeout` for data.
  std::string ReadSome(size_t max, milliseconds timeout);
  // Reads until the peer closes (true) or `timeout` passes (false).
  bool ReadUntilClosed(milliseconds timeout, std::string* data = nullptr);

 private:
  int fd_ = -1;
};

// A listening socket on 127.0.0.1, ephemeral port.
class RawListener {
 public:
  RawListener();
  ~RawListener();
  uint16_t port() const { return port_; }
  // Waits for one connection; invalid socket on timeout.
  RawSocket Accept(milliseconds timeout);

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

struct ParsedResponse {
  int status = 0;
  std::string head;  // Status line and header block.
  std::string body;  // Decoded (Content-Length or chunked).
  bool complete = false;
};

// Parses the first complete response in `bytes` (independent of the
// server's own code); `consumed` gets its length.
ParsedResponse ParseResponse(std::string_view bytes, size_t* consumed = nullptr);

// Reads from `socket` until one response is complete or `timeout`.
ParsedResponse ReadResponse(RawSocket& socket, milliseconds timeout, std::string* rest = nullptr);

}  // namespace swiftlet::http::testing
