// libFuzzer target for WebSocket frames, in one thread: the server side of
// a WebSocket session (Beast's frame parser, UTF-8 check and size limit,
// and our session's close and linger logic) reads whatever bytes a client
// sent after a valid upgrade, from one end of a socket pair, and echoes
// each text message. Its I/O runs on the fuzzing thread's own io_context,
// so an input costs a few system calls instead of a TCP connection to a
// multi-threaded server (websocket_frame_fuzz, which covers the server's
// upgrade path too, runs ~140 inputs a second; this one 700-1,300 on the
// 2-core development VM).
//
// Must hold for every input: the session ends (on_close, then the owner's
// `finished`) on the client's EOF, not at one of its deadlines, and within
// kHangMillis of waiting after the client's last byte;
// once it has ended and its handles are dropped, the session is destroyed
// and nothing of it is left pending on the io_context (no timer, no
// operation).
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>

#include "absl/status/status.h"
#include "http/message.h"
#include "http/tls_stream.h"
#include "http/websocket.h"
#include "http/websocket_session.h"

namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using swiftlet::http::Headers;
using swiftlet::http::WebSocket;
using swiftlet::http::WebSocketOptions;
using swiftlet::http::internal::MakeWsSession;
using swiftlet::http::internal::NetStream;
using swiftlet::http::internal::WsEnd;
using swiftlet::http::internal::WsEvents;
using swiftlet::http::internal::WsSession;
using swiftlet::http::internal::WsSessionParts;

constexpr auto kHangMillis = 5'000ms;
constexpr auto kPoll = 2ms;
// Far more handlers than any input of -max_len bytes needs (a few per frame).
constexpr int kMaxHandlers = 1'000'000;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "websocket_session_fuzz: %s\n", what);
  std::abort();
}

asio::io_context& Io() {
  static asio::io_context* io = new asio::io_context(1);  // Never destroyed.
  return *io;
}

// Reads and discards what the session wrote (its 101, echoes, close
// frame), so its writes never wait on a full socket buffer.
void Drain(int fd) {
  char buf[16384];
  while (::recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
  }
}

// Writes as much of the input as the socket takes without waiting; the
// rest is written while the session runs.
size_t WriteSome(int fd, const uint8_t* data, size_t size) {
  ssize_t n = ::send(fd, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  asio::io_context& io = Io();
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) Fail("socketpair");
  const int client = fds[1];

  WebSocketOptions options;
  options.max_message_bytes = 1024;  // Small, so inputs within -max_len pass it.
  // The client closes its side after its last byte, so every wait of the
  // session ends on that EOF: one that ends at a deadline instead (a close
  // Beast parked, websocket_session.cc) is a finding. Long, because the
  // session's timers read the wall clock: a fuzzer starved for a second
  // beside other work saw a false one at 1 s (docs/FUZZING.md). A parked
  // close fails the idle-poll hang check (5 s) first.
  options.close_timeout = 20'000ms;
  options.handshake_timeout = 20'000ms;
  options.ping_interval = 20'000ms;
  bool closed = false;
  bool finished = false;
  auto handle = std::make_shared<std::shared_ptr<WebSocket>>();
  WsEvents events;
  events.on_message = [handle](std::string text) {
    if (*handle) (*handle)->SendText(std::move(text));
  };
  events.on_close = [&closed](WsEnd end) {
    if (closed) Fail("on_close ran twice");
    // To see how inputs end (e.g. which wait for close_timeout).
    static const bool verbose = std::getenv("SWIFTLET_FUZZ_VERBOSE") != nullptr;
    if (verbose) {
      std::fprintf(stderr, "websocket_session_fuzz: ended %d (%s): %s\n", end.code, end.reason.c_str(),
                   end.status.ToString().c_str());
    }
    if (absl::IsDeadlineExceeded(end.status)) Fail("the session waited for a deadline, not the client's EOF");
    closed = true;
  };
  WsSessionParts parts = MakeWsSession(
      io.get_executor(),
      [&io](std::function<void()> fn) {
        asio::post(io, std::move(fn));
        return true;
      },
      options, std::move(events), [&closed, &finished] {
        if (!closed) Fail("finished before on_close");
        finished = true;
      });
  *handle = parts.handle;
  std::weak_ptr<WsSession> weak_session = parts.session;

  asio::ip::tcp::socket socket(io);
  boost::system::error_code ec;
  socket.assign(asio::ip::tcp::v4(), fds[0], ec);  // A stream socket; TCP options fail, ignored.
  if (ec) Fail("cannot adopt the socket");
  Headers upgrade{{"Host", "fuzz"},
                  {"Upgrade", "websocket"},
                  {"Connection", "Upgrade"},
                  {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                  {"Sec-WebSocket-Version", "13"}};
  parts.session->Accept(NetStream(std::move(socket)), "/fuzz?a=1", std::move(upgrade));

  // A hang is counted in idle polls (each waits kPoll with nothing to
  // run), not read off the clock: a fuzzer paused with SIGSTOP must not
  // find one. A session that keeps running handlers without ending is a
  // hang too.
  size_t sent = 0;
  bool shut = false;
  int idle = 0;
  int handlers = 0;
  io.restart();
  while (!finished) {
    if (idle > kHangMillis / kPoll) Fail("the session did not end (waits with nothing to do)");
    if (handlers > kMaxHandlers) Fail("the session did not end (runs handlers without end)");
    if (sent < size) sent += WriteSome(client, data + sent, size - sent);
    if (sent == size && !shut) {
      ::shutdown(client, SHUT_WR);  // The client has said everything.
      shut = true;
      idle = 0;
    }
    if (io.run_one_for(kPoll) == 0) {
      ++idle;
    } else {
      ++handlers;
    }
    Drain(client);
  }

  // Ended: drop every reference the owner and the application held; the
  // session must go, and with it everything it had pending.
  parts = WsSessionParts();
  handle->reset();
  // Its cancelled operations and timers complete at once; anything still
  // pending after they ran (a timer, a read) was leaked.
  io.restart();
  for (handlers = 0; io.poll_one() > 0;) {
    if (++handlers > kMaxHandlers) Fail("handlers run without end after the session ended");
  }
  if (!io.stopped()) Fail("work is left pending after the session ended");
  if (!weak_session.expired()) Fail("the session outlives its owner and handles");
  ::close(client);
  return 0;
}
