// libFuzzer target for WebSocket frames: whatever bytes a client sends after
// a valid upgrade, the server (Beast's frame parser, UTF-8 check, size
// limit, and our session's close logic) must answer with echoes, a close
// frame or a dropped connection, and then close: never a crash, an
// unbounded allocation, or a connection that stays open (or counted) once
// the client has stopped sending. One echo server (started once, never destroyed: its
// threads run for the whole process) serves each input on a new TCP
// connection through the public API.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "http/server.h"
#include "http/websocket.h"

namespace {

using namespace std::chrono_literals;
using swiftlet::http::HttpRequest;
using swiftlet::http::ResponseWriter;
using swiftlet::http::WebSocket;

// A connection the server has not closed this long after the input ended
// is a hang.
constexpr int kHangMillis = 5'000;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "websocket_frame_fuzz: %s\n", what);
  std::abort();
}

swiftlet::http::HttpServer& Server() {
  static swiftlet::http::HttpServer* server = [] {
    swiftlet::http::HttpServerOptions options;
    options.port = 0;
    swiftlet::http::WebSocketOptions socket_options;
    socket_options.max_message_bytes = 4096;  // Small, so inputs can pass it.
    socket_options.close_timeout = 500ms;
    auto* server = new swiftlet::http::HttpServer(
        options, [socket_options](HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
          auto socket = std::make_shared<std::shared_ptr<WebSocket>>();
          swiftlet::http::WebSocketHandlers handlers;
          handlers.on_message = [socket](std::string text) {
            (*socket)->SendText(std::move(text));
          };
          if (!swiftlet::http::IsWebSocketUpgrade(request)) Fail("the fixed upgrade was refused");
          *socket = writer->AcceptWebSocket(socket_options, std::move(handlers));
        });
    if (!server->Start().ok()) Fail("cannot start the server");
    return server;
  }();
  return *server;
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;  // The server may close first (a bad frame).
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads until the server closes; false if it does not within kHangMillis.
bool DrainUntilClosed(int fd, std::string* head) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHangMillis);
  char buf[16384];
  while (true) {
    if (head != nullptr && head->find("\r\n\r\n") != std::string::npos) return true;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return head == nullptr;  // EOF or reset: closed.
    if (head != nullptr) head->append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint16_t port = Server().port();
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    Fail("cannot connect");
  }
  const std::string upgrade =
      "GET /fuzz?a=1 HTTP/1.1\r\nHost: fuzz\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
  std::string head;
  if (!SendAll(fd, upgrade) || !DrainUntilClosed(fd, &head) ||
      head.compare(0, 12, "HTTP/1.1 101") != 0) {
    Fail("no 101 for the fixed upgrade");
  }
  // The 101 may have arrived with nothing after it; the frames follow.
  SendAll(fd, std::string_view(reinterpret_cast<const char*>(data), size));
  ::shutdown(fd, SHUT_WR);
  if (!DrainUntilClosed(fd, nullptr)) Fail("the server kept the connection open");
  ::close(fd);
  // Both sides are done: the server must let the connection go, not just
  // stop talking on it (a session stuck inside Beast stays counted).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHangMillis);
  while (Server().open_connections() != 0) {
    if (std::chrono::steady_clock::now() > deadline) Fail("the connection stays counted as open");
    ::usleep(200);
  }
  return 0;
}
