// WebSocket connections end to end: the project's client against its
// server, and hand-made frames (ws_frames.h) where a test needs a peer that
// misbehaves.
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "http/server.h"
#include "http/websocket.h"
#include "http/websocket_client.h"
#include "raw_socket.h"
#include "server_fixture.h"
#include "ws_frames.h"

namespace swiftlet::http::testing {
namespace {

using ::testing::HasSubstr;

// What the server side saw: every on_close and the sockets it accepted.
struct ServerLog {
  std::mutex mu;
  std::vector<std::pair<int, std::string>> closes;
  std::vector<std::shared_ptr<WebSocket>> sockets;
  std::vector<std::string> queries;
  Counter closed;
  Counter accepted;

  void OnClose(int code, std::string reason) {
    {
      std::lock_guard lock(mu);
      closes.emplace_back(code, std::move(reason));
    }
    closed.Add();
  }
  std::vector<std::pair<int, std::string>> Closes() {
    std::lock_guard lock(mu);
    return closes;
  }
  std::shared_ptr<WebSocket> Socket(size_t i) {
    std::lock_guard lock(mu);
    return i < sockets.size() ? sockets[i] : nullptr;
  }
};

// One client connection's record; callbacks hold it by shared_ptr.
struct ClientConn {
  std::shared_ptr<WebSocket> ws;
  std::mutex mu;
  std::vector<std::string> messages;
  std::optional<WebSocketClientClose> close;
  Counter opened, received, closed;

  std::vector<std::string> Messages() {
    std::lock_guard lock(mu);
    return messages;
  }
  WebSocketClientClose Close() {
    std::lock_guard lock(mu);
    return close.value_or(WebSocketClientClose{});
  }
};

std::shared_ptr<ClientConn> Open(WebSocketClient& client, std::string target,
                                 Headers headers = {}) {
  auto conn = std::make_shared<ClientConn>();
  WebSocketClientHandlers h;
  h.on_open = [conn](const Headers&) { conn->opened.Add(); };
  h.on_message = [conn](std::string text) {
    {
      std::lock_guard lock(conn->mu);
      conn->messages.push_back(std::move(text));
    }
    conn->received.Add();
  };
  h.on_close = [conn](const WebSocketClientClose& close) {
    {
      std::lock_guard lock(conn->mu);
      EXPECT_FALSE(conn->close.has_value()) << "on_close ran twice";
      conn->close = close;
    }
    conn->closed.Add();
  };
  conn->ws = client.Connect(std::move(target), std::move(headers), std::move(h));
  return conn;
}

WebSocketOptions QuickSocket() {
  WebSocketOptions o;
  o.ping_interval = 300ms;
  o.handshake_timeout = 2s;
  o.close_timeout = 1s;
  return o;
}

class WebSocketTest : public ::testing::Test {
 protected:
  // Accepts upgrades at /ws (after `check`, which may refuse with a status)
  // and echoes; anything else gets 200 "plain".
  void StartServer(WebSocketOptions socket_options = QuickSocket(),
                   HttpServerOptions server_options = FastOptions()) {
    server_ = std::make_unique<HttpServer>(
        std::move(server_options),
        [this, socket_options](HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
          if (request.path != "/ws") return (void)writer->Respond(404, {}, "no");
          if (!IsWebSocketUpgrade(request)) return (void)writer->Respond(200, {}, "plain");
          if (refuse_origin_ && request.headers.Get("origin") == refuse_origin_) {
            return (void)writer->Respond(403, {}, "origin not allowed");
          }
          Accept(request, *writer, socket_options);
        });
    ASSERT_TRUE(server_->Start().ok());
  }

  void Accept(const HttpRequest& request, ResponseWriter& writer, WebSocketOptions options) {
    auto socket = std::make_shared<std::shared_ptr<WebSocket>>();
    WebSocketHandlers h;
    h.on_message = [this, socket](std::string text) {
      if (on_server_message_) return on_server_message_(**socket, std::move(text));
      (*socket)->SendText(std::move(text));
    };
    h.on_close = [this](int code, std::string reason) { log_.OnClose(code, std::move(reason)); };
    std::shared_ptr<WebSocket> ws = writer.AcceptWebSocket(options, std::move(h));
    ASSERT_NE(ws, nullptr);
    *socket = ws;  // The handler holds the socket until on_close releases it.
    {
      std::lock_guard lock(log_.mu);
      log_.sockets.push_back(ws);
      log_.queries.push_back(request.query);
    }
    log_.accepted.Add();
  }

  std::unique_ptr<WebSocketClient> MakeClient(WebSocketOptions socket = QuickSocket()) {
    WebSocketClientOptions o;
    o.port = server_->port();
    o.socket = socket;
    return std::make_unique<WebSocketClient>(std::move(o));
  }

  void TearDown() override {
    if (server_) server_->Stop(0ms);
    server_.reset();
    std::lock_guard lock(log_.mu);
    log_.sockets.clear();
  }

  ServerLog log_;
  std::optional<std::string> refuse_origin_;
  std::function<void(WebSocket&, std::string)> on_server_message_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(WebSocketTest, EchoesInOrderAcrossManyConnections) {
  StartServer();
  auto client = MakeClient();
  constexpr int kConnections = 100;  // The load generator holds about this many streams.
  constexpr int kMessages = 60;
  std::vector<std::shared_ptr<ClientConn>> conns;
  for (int c = 0; c < kConnections; ++c) {
    conns.push_back(Open(*client, "/ws?languages=en,ja&budget_ms=800&c=" + std::to_string(c)));
  }
  // Sent from several threads at once, most before the handshake is done.
  std::vector<std::thread> senders;
  for (int t = 0; t < 4; ++t) {
    senders.emplace_back([&, t] {
      for (int c = t; c < kConnections; c += 4) {
        for (int m = 0; m < kMessages; ++m) {
          EXPECT_TRUE(conns[c]->ws->SendText("c" + std::to_string(c) + " m" + std::to_string(m)));
        }
      }
    });
  }
  for (auto& t : senders) t.join();
  for (int c = 0; c < kConnections; ++c) {
    ASSERT_TRUE(conns[c]->received.WaitAtLeast(kMessages, 10s)) << "connection " << c;
    std::vector<std::string> got = conns[c]->Messages();
    ASSERT_EQ(got.size(), static_cast<size_t>(kMessages));
    for (int m = 0; m < kMessages; ++m) {
      ASSERT_EQ(got[m], "c" + std::to_string(c) + " m" + std::to_string(m));
    }
  }
  EXPECT_EQ(server_->open_connections(), static_cast<size_t>(kConnections));
  EXPECT_EQ(client->open_connections(), static_cast<size_t>(kConnections));
  {
    std::lock_guard lock(log_.mu);
    ASSERT_EQ(log_.queries.size(), static_cast<size_t>(kConnections));
    for (const std::string& q : log_.queries) {
      EXPECT_THAT(q, HasSubstr("languages=en,ja&budget_ms=800&c="));
    }
  }
  for (auto& conn : conns) conn->ws->Close(websocket_close::kNormal, "done");
  ASSERT_TRUE(log_.closed.WaitAtLeast(kConnections, 5s));
  for (auto& conn : conns) {
    ASSERT_TRUE(conn->closed.WaitAtLeast(1, 5s));
    EXPECT_EQ(conn->Close().code, websocket_close::kNormal);
    EXPECT_EQ(conn->Close().reason, "done");
    EXPECT_TRUE(conn->Close().status.ok()) << conn->Close().status;
    EXPECT_EQ(conn->Close().http_status, 101);
    EXPECT_TRUE(conn->ws->closed());
  }
  for (auto& [code, reason] : log_.Closes()) {
    EXPECT_EQ(code, websocket_close::kNormal);
    EXPECT_EQ(reason, "done");
  }
  // A connection counts until its socket is closed, just after on_close.
  EXPECT_TRUE(WaitFor([&] { return server_->open_connections() == 0; }, 2s));
  EXPECT_TRUE(WaitFor([&] { return client->open_connections() == 0; }, 2s));
}

// Connections end when the peer is done, not when close_timeout runs out.
TEST_F(WebSocketTest, FinishedConnectionsAreReleasedAtOnce) {
  WebSocketOptions o = QuickSocket();
  o.close_timeout = 10s;
  StartServer(o);
  std::string head, buffer;
  RawSocket raw = ConnectWebSocket(server_->port(), "/ws", &head, &buffer);
  ASSERT_TRUE(raw.valid());
  ASSERT_TRUE(log_.accepted.WaitAtLeast(1, 2s));
  raw.ShutdownWrite();  // Gone without a close frame.
  ASSERT_TRUE(log_.closed.WaitAtLeast(1, 2s));
  EXPECT_EQ(log_.Closes()[0].first, websocket_close::kAbnormal);
  EXPECT_TRUE(raw.ReadUntilClosed(2s));
  EXPECT_TRUE(WaitFor([&] { return server_->open_connections() == 0; }, 2s));

  auto client = MakeClient(o);
  for (int i = 0; i < 3; ++i) {  // A close handshake from either side.
    auto conn = Open(*client, "/ws");
    ASSERT_TRUE(conn->opened.WaitAtLeast(1, 2s));
    if (i == 0) {
      conn->ws->Close();
    } else {
      ASSERT_TRUE(log_.accepted.WaitAtLeast(2 + i, 2s));  // The raw socket was the first.
      log_.Socket(1 + i)->Close(4000 + i, "");
    }
    ASSERT_TRUE(conn->closed.WaitAtLeast(1, 2s));
    EXPECT_TRUE(conn->Close().status.ok()) << conn->Close().status;
    EXPECT_TRUE(WaitFor([&] { return server_->open_connections() == 0; }, 2s));
    EXPECT_TRUE(WaitFor([&] { return client->open_connections() == 0; }, 2s));
  }
}

TEST_F(WebSocketTest, ServerCloseReachesTheClientWithItsCode) {
  on_server_message_ = [](WebSocket& ws, std::string text) {
    ws.SendText("last words");
    ws.Close(4000, "bye: " + text);
    EXPECT_FALSE(ws.SendText("after close"));
    EXPECT_TRUE(ws.closed());
  };
  StartServer();
  auto client = MakeClient();
  auto conn = Open(*client, "/ws");
  conn->ws->SendText("now");
  ASSERT_TRUE(conn->closed.WaitAtLeast(1, 5s));
  EXPECT_EQ(conn->Messages(), std::vector<std::string>{"last words"});
  EXPECT_EQ(conn->Close().code, 4000);
  EXPECT_EQ(conn->Close().reason, "bye: now");
  EXPECT_TRUE(conn->Close().status.ok());
  ASSERT_TRUE(log_.closed.WaitAtLeast(1, 2s));
  EXPECT_EQ(log_.Closes()[0].first, 4000);
}

TEST_F(WebSocketTest, MessageOverTheLimitClosesWith1009) {
  WebSocketOptions o = QuickSocket();
  o.max_message_bytes = 1000;
  StartServer(o);
  auto client = MakeClient();
  auto conn = Open(*client, "/ws");
  conn->ws->SendText(std::string(1000, 'a'));  // Exactly the limit: fine.
  ASSERT_TRUE(conn->received.WaitAtLeast(1, 3s));
  conn->ws->SendText(std::string(1001, 'b'));
  ASSERT_TRUE(conn->closed.WaitAtLeast(1, 3s));
  EXPECT_EQ(conn->Close().code, websocket_close::kMessageTooBig);
  ASSERT_TRUE(log_.closed.WaitAtLeast(1, 2s));
  EXPECT_EQ(log_.Closes()[0].first, websocket_close::kMessageTooBig);
  EXPECT_EQ(conn->Messages().size(), 1u);
}

TEST_F(WebSocketTest, ClientLimitsWhatTheServerSends) {
  on_server_message_ = [](WebSocket& ws, std::string) { ws.SendText(std::string(5000, 'x')); };
  StartServer();
  WebSocketOptions small = QuickSocket();
  small.max_message_bytes = 4096;
  auto client = MakeClient(small);
  auto conn = Open(*client, "/ws");
  conn->ws->SendText("go");
  ASSERT_TRUE(conn->closed.WaitAtLeast(1, 3s));
  EXPECT_EQ(conn->Close().code, websocket_close::kMessageTooBig);
  EXPECT_EQ(conn->Close().status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(conn->Messages().empty());
  ASSERT_TRUE(log_.closed.WaitAtLeast(1, 2s));
  EXPECT_EQ(log_.Closes()[0].first, websocket_close::kMessageTooBig);
}

TEST_F(WebSocketTest, UpgradeAnswerFollowsTheRfc) {
  StartServer();
  std::string head, buffer;
  RawSocket raw = ConnectWebSocket(server_->port(), "/ws?x=1", &head, &buffer);
  ASSERT_TRUE(raw.valid()) << head;
  EXPECT_THAT(head, HasSubstr("Sec-WebSocket-Accept: " + std::string(kRfcAccept) + "\r\n"));
  EXPECT_THAT(head, ::testing::ContainsRegex("[Uu]pgrade: websocket"));
  EXPECT_THAT(head, ::testing::Not(HasSubstr("permessage-deflate")));
  // A masked text frame comes back unmasked, whole.
  ASSERT_TRUE(raw.Send(ClientFrame(kOpText, "héllo")));
  std::optional<Frame> f = ReadFrame(raw, buffer, 2s);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->opcode, kOpText);
  EXPECT_TRUE(f->fin);
  EXPECT_EQ(f->payload, "héllo");
}

TEST_F(WebSocketTest, BinaryMessageClosesWith1003) {
  StartServer();
  std::string head, buffer;
  RawSocket raw = ConnectWebSocket(server_->port(), "/ws", &head, &buffer);
  ASSERT_TRUE(raw.valid());
  ASSERT_TRUE(raw.Send(ClientFrame(kOpBinary, std::string("\x00\x01\x02", 3))));
  std::optional<Frame> f = ReadFrame(raw, buffer, 2s);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->opcode, kOpClose);
  EXPECT_EQ(f->close_code(), websocket_close::kUnsupportedData);
  ASSERT_TRUE(raw.Send(ClientFrame(kOpClose, ClosePayload(websocket_close::kUnsupportedData))));
  EXPECT_TRUE(raw.ReadUntilClosed(2s));
  ASSERT_TRUE(log_.closed.WaitAtLeast(1, 2s));
  EXPECT_EQ(log_.Closes()[0].first, websocket_close::kUnsupportedData);
}

// Our close frame goes out while a bad frame is already buffered behind the
// message that caused it: Beast 1.74 could park its read and close on each
// other here for good.
TEST_F(WebSocketTest, ABadFrameBehindAClosingMessageDoesNotHang) {
  WebSocketOptions o = QuickSocket();
  o.close_timeout = 3s;  // The session must end well before this.
  StartServer(o);
  std::string head, buffer;
  RawSocket raw = ConnectWebSocket(server_->port(), "/ws", &head, &buffer);
  ASSERT_TRUE(raw.valid());
  std::string unmasked = "\x82\x61\x29";  // Binary, unmasked, cut short.
  ASSERT_TRUE(raw.Send(ClientFrame(kOpBinary, "ab") + unmasked));
  std::optional<Frame> f = ReadFrame(raw, buffer, 2s);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->close_code(), websocket_close::kUnsupportedData);
  ASSERT_TRUE(log_.closed.WaitAtLeast(1, 1s));
  EXPECT_EQ(log_.Closes()[0].first, websocket_close::kUnsupportedData);
  EXPECT_TRUE(raw.ReadUntilClosed(1s));
  raw.Close();  // The server waits (up to close_timeout) for this.
  EXPECT_TRUE(WaitFor([&] { return server_->open_connections() == 0; }, 1s));
}

// The binary message that closes the connection arrives while the echo of
// the text before it is still being written, and a bad frame follows.
// Reading on beside the queued close could leave Beast's read (failing on
// the bad frame) and our close parked on each other until close_timeout
// (found by websocket_session_fuzz): no read starts once the session is
// closing. The old interleaving came up about once in ten connections on
// the development VM; fifty failed five runs in six without the fix.
TEST_F(WebSocketTest, ABadFrameAfterAnEchoAndAClosingMessageDoesNotPark) {
  WebSocketOptions o = QuickSocket();
  o.close_timeout = 10s;  // Every session must end well before this,
  o.ping_interval = 20s;  // and not by the ping timer either.
  StartServer(o);
  // Reserved opcode 6, not final, unmasked: a protocol error three ways.
  const std::string bad_frame("\x06\x00", 2);
  const std::string bytes =
      ClientFrame(kOpText, "hello") + ClientFrame(kOpBinary, "ab") + ClientFrame(kOpPong, "") + bad_frame;
  constexpr int kConnections = 50;
  for (int i = 0; i < kConnections; ++i) {
    std::string head, buffer;
    RawSocket raw = ConnectWebSocket(server_->port(), "/ws", &head, &buffer);
    ASSERT_TRUE(raw.valid());
    ASSERT_TRUE(raw.Send(bytes));
    raw.ShutdownWrite();  // The client has said everything.
    ASSERT_TRUE(log_.closed.WaitAtLeast(i + 1, 5s)) << "connection " << i << " waited for its close deadline";
    EXPECT_TRUE(raw.ReadUntilClosed(5s));
  }
  for (const auto& [code, reason] : log_.Closes()) EXPECT_EQ(code, websocket_close::kUnsupportedData) << reason;
  EXPECT_TRUE(WaitFor([&] { return server_->open_connections() == 0; }, 5s));
}

TEST_F(WebSocketTest, InvalidUtf8ClosesWith1007) {
  StartServer();
  std::string head, buffer;
  RawSocket raw = ConnectWebSocket(server_->port(), "/ws", &head, &buffer);
  ASSERT_TRUE(raw.valid());
  ASSERT_TRUE(raw.Send(ClientFrame(kOpText, "ok \xC3\x28 no")));
  std::optional<Frame> f = ReadFrame(raw, buffer, 2s);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->opcode, kOpClose);
  EXPECT_EQ(f->close_code(), websocket_close::kInvalidPayload);
  // The peer never finishes the close: the ping timer ends it.
  ASSERT_TRUE(log_.closed.WaitAtLeast(1, 2s));
  EXPECT_EQ(log_.Closes()[0].first, websocket_close::kInvalidPayload);
}

TEST_F(WebSocketTest, PingsKeepAnIdleConnectionOpen) {
  WebSocketOptions o = QuickSocket();
  o.ping_interval = 50ms;
  StartServer(o);
  WebSocketOptions quiet = QuickSocket();
  quiet.ping_interval = 1h;  // No pings of its own: only its pongs keep it open.
  auto client = MakeClient(quiet);
  auto conn = Open(*client, "/ws");
  ASSERT_TRUE(conn->opened.WaitAtLeast(1, 2s));
  std::this_thread::sleep_for(600ms);  // Twelve ping intervals of silence.
  EXPECT_EQ(conn->closed.value(), 0);
  EXPECT_EQ(log_.closed.value(), 0);
  conn->ws->SendText("still here");
  ASSERT_TRUE(conn->received.WaitAtLeast(1, 2s));
  EXPECT_EQ(conn->Messages()[0], "still here");
}

TEST_F(WebSocketTest, SilentPeerIsCutOff) {
  WebSocketOptions o = QuickSocket();
  o.ping_interval = 50ms;
  StartServer(o);
  std::string head, buffer;
  RawSocket raw = ConnectWebSocket(server_->port(), "/ws", &head, &buffer);
  ASSERT_TRUE(raw.valid());
  // The server pings, the peer never answers: dropped within two intervals
  // (plus scheduling slack).
  std::optional<Frame> ping = ReadFrame(raw, buffer, 1s);
  ASSERT_TRUE(ping.has_value());
  EXPECT_EQ(ping->opcode, kOpPing);
  ASSERT_TRUE(log_.closed.WaitAtLeast(1, 2s));
  EXPECT_EQ(log_.Closes()[0].first, websocket_close::kAbnormal);
  EXPECT_TRUE(raw.ReadUntilClosed(1s));
  EXPECT_TRUE(WaitFor([&] { return server_->open_connections() == 0; }, 1s));
}

TEST_F(WebSocketTest, AnsweredPingsKeepARawPeerOpen) {
  WebSocketOptions o = QuickSocket();
  o.ping_interval = 50ms;
  StartServer(o);
  std::string head, buffer;
  RawSocket raw = ConnectWebSocket(server_->port(), "/ws", &head, &buffer);
  ASSERT_TRUE(raw.valid());
  for (int i = 0; i < 8; ++i) {  // ~400 ms: four times the cut-off.
    std::optional<Frame> ping = ReadFrame(raw, buffer, 1s);
    ASSERT_TRUE(ping.has_value()) << i;
    ASSERT_EQ(ping->opcode, kOpPing);
    ASSERT_TRUE(raw.Send(ClientFrame(kOpPong, ping->payload)));
  }
  EXPECT_EQ(log_.closed.value(), 0);
}

TEST_F(WebSocketTest, StopClosesWith1001AndRunsOnCloseOnce) {
  StartServer();
  auto client = MakeClient();
  std::vector<std::shared_ptr<ClientConn>> conns;
  for (int i = 0; i < 5; ++i) conns.push_back(Open(*client, "/ws"));
  for (auto& c : conns) ASSERT_TRUE(c->opened.WaitAtLeast(1, 2s));
  ASSERT_TRUE(log_.accepted.WaitAtLeast(5, 2s));
  auto start = std::chrono::steady_clock::now();
  server_->Stop(100ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(log_.closed.value(), 5);
  for (auto& [code, reason] : log_.Closes()) EXPECT_EQ(code, websocket_close::kGoingAway);
  for (auto& c : conns) {
    ASSERT_TRUE(c->closed.WaitAtLeast(1, 2s));
    EXPECT_EQ(c->Close().code, websocket_close::kGoingAway);
  }
  EXPECT_EQ(server_->open_connections(), 0u);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(log_.Socket(i)->closed());
  EXPECT_FALSE(log_.Socket(0)->SendText("after stop"));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(log_.closed.value(), 5);  // Exactly once each.
}

TEST_F(WebSocketTest, ClientDestructionClosesWith1001) {
  StartServer();
  auto client = MakeClient();
  auto conn = Open(*client, "/ws");
  ASSERT_TRUE(conn->opened.WaitAtLeast(1, 2s));
  client.reset();
  EXPECT_EQ(conn->closed.value(), 1);
  EXPECT_EQ(conn->Close().code, websocket_close::kGoingAway);
  ASSERT_TRUE(log_.closed.WaitAtLeast(1, 2s));
  EXPECT_EQ(log_.Closes()[0].first, websocket_close::kGoingAway);
}

TEST_F(WebSocketTest, SendHardLimitClosesWith1008) {
  WebSocketOptions o = QuickSocket();
  o.send_soft_limit = 64 << 10;
  o.send_hard_limit = 256 << 10;
  o.close_timeout = 300ms;
  StartServer(o);
  // A peer that reads nothing, through a small receive buffer.
  std::string head, buffer;
  RawSocket raw = ConnectWebSocket(server_->port(), "/ws", &head, &buffer, 4096);
  ASSERT_TRUE(raw.valid());
  ASSERT_TRUE(log_.accepted.WaitAtLeast(1, 2s));
  std::shared_ptr<WebSocket> ws = log_.Socket(0);
  const std::string chunk(16 << 10, 'z');
  bool saw_slow_down = false;
  int sent = 0;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!ws->closed() && std::chrono::steady_clock::now() < deadline) {
    if (!ws->SendText(chunk) && !ws->closed()) saw_slow_down = true;
    ++sent;
  }
  EXPECT_TRUE(saw_slow_down);
  ASSERT_TRUE(ws->closed());
  EXPECT_GE(sent, 16);
  EXPECT_LE(ws->buffered_bytes(), o.send_hard_limit);
  // The close frame cannot get through either: close_timeout drops it.
  ASSERT_TRUE(log_.closed.WaitAtLeast(1, 3s));
  EXPECT_EQ(log_.Closes()[0].first, websocket_close::kPolicyViolation);
  EXPECT_EQ(ws->buffered_bytes(), 0u);
  EXPECT_TRUE(WaitFor([&] { return server_->open_connections() == 0; }, 1s));
}

TEST_F(WebSocketTest, SendHardLimitReachesAReadingClientAs1008) {
  WebSocketOptions o = QuickSocket();
  o.send_soft_limit = 64 << 10;
  o.send_hard_limit = 256 << 10;
  // All queued inside one on_message, before any byte can leave.
  on_server_message_ = [](WebSocket& ws, std::string) {
    const std::string chunk(32 << 10, 'q');
    for (int i = 0; i < 100 && ws.SendText(chunk); ++i) {
    }
    while (!ws.closed()) ws.SendText(chunk);
  };
  StartServer(o);
  auto client = MakeClient();
  auto conn = Open(*client, "/ws");
  conn->ws->SendText("flood me");
  ASSERT_TRUE(conn->closed.WaitAtLeast(1, 3s));
  EXPECT_EQ(conn->Close().code, websocket_close::kPolicyViolation);
  EXPECT_LE(conn->Messages().size(), 8u);  // What was queued is dropped, not delivered.
  ASSERT_TRUE(log_.closed.WaitAtLeast(1, 2s));
  EXPECT_EQ(log_.Closes()[0].first, websocket_close::kPolicyViolation);
}

TEST_F(WebSocketTest, RefusedUpgradeGetsTheHandlersStatus) {
  refuse_origin_ = "https://evil.example";
  StartServer();
  auto client = MakeClient();
  auto refused = Open(*client, "/ws", Headers{{"Origin", "https://evil.example"}});
  ASSERT_TRUE(refused->closed.WaitAtLeast(1, 3s));
  EXPECT_EQ(refused->opened.value(), 0);
  EXPECT_EQ(refused->Close().http_status, 403);
  EXPECT_EQ(refused->Close().http_body, "origin not allowed");
  EXPECT_EQ(refused->Close().status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused->Close().code, websocket_close::kAbnormal);
  EXPECT_FALSE(refused->ws->SendText("x"));

  auto welcome = Open(*client, "/ws", Headers{{"Origin", "https://good.example"}});
  ASSERT_TRUE(welcome->opened.WaitAtLeast(1, 3s));
  auto missing = Open(*client, "/nothing-here");
  ASSERT_TRUE(missing->closed.WaitAtLeast(1, 3s));
  EXPECT_EQ(missing->Close().http_status, 404);
  EXPECT_EQ(log_.accepted.value(), 1);
}

TEST_F(WebSocketTest, PlainHttpOnTheSameRouteIsAnsweredNormally) {
  StartServer();
  HttpClientOptions co;
  co.port = server_->port();
  HttpClient http(co);
  Fetched f = Fetch(http, Get("/ws?languages=en"));
  ASSERT_TRUE(f.status.ok()) << f.status;
  EXPECT_EQ(f.response.status, 200);
  EXPECT_EQ(f.response.body, "plain");
  // And the keep-alive connection it used is still a plain HTTP one.
  Fetched again = Fetch(http, Get("/ws"));
  EXPECT_EQ(again.response.body, "plain");
  EXPECT_TRUE(again.response.reused_connection);
}

TEST_F(WebSocketTest, AcceptOnAPlainRequestLeavesTheWriterUsable) {
  server_ = std::make_unique<HttpServer>(
      FastOptions(), [](HttpRequest, std::shared_ptr<ResponseWriter> writer) {
        std::shared_ptr<WebSocket> ws = writer->AcceptWebSocket(QuickSocket(), {});
        writer->Respond(426, Headers{{"Upgrade", "websocket"}},
                        ws ? "accepted?" : "upgrade required");
      });
  ASSERT_TRUE(server_->Start().ok());
  RawSocket raw = RawSocket::Connect(server_->port());
  ASSERT_TRUE(raw.Send("GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n"
                       "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n"));  // No key.
  ParsedResponse r = ReadResponse(raw, 2s);
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 426);
  EXPECT_EQ(r.body, "upgrade required");
}

TEST_F(WebSocketTest, BytesBeforeTheUpgradeCompletesAreRefused) {
  StartServer();
  RawSocket raw = RawSocket::Connect(server_->port());
  ASSERT_TRUE(raw.Send(UpgradeRequest("/ws") + ClientFrame(kOpText, "too early")));
  std::string data;
  raw.ReadUntilClosed(2s, &data);
  EXPECT_THAT(data, ::testing::StartsWith("HTTP/1.1 400"));
  ASSERT_TRUE(log_.closed.WaitAtLeast(1, 2s));
  EXPECT_EQ(log_.Closes()[0].first, websocket_close::kProtocolError);
}

TEST_F(WebSocketTest, SocketsCountAgainstMaxConnections) {
  HttpServerOptions so = FastOptions();
  so.max_connections = 3;
  StartServer(QuickSocket(), so);
  auto client = MakeClient();
  std::vector<std::shared_ptr<ClientConn>> conns;
  for (int i = 0; i < 3; ++i) conns.push_back(Open(*client, "/ws"));
  for (auto& c : conns) ASSERT_TRUE(c->opened.WaitAtLeast(1, 2s));
  EXPECT_EQ(server_->open_connections(), 3u);
  auto fourth = Open(*client, "/ws");
  ASSERT_TRUE(fourth->closed.WaitAtLeast(1, 2s));
  EXPECT_EQ(fourth->Close().http_status, 503);
  conns[0]->ws->Close();
  ASSERT_TRUE(conns[0]->closed.WaitAtLeast(1, 2s));
  ASSERT_TRUE(WaitFor([&] { return server_->open_connections() == 2; }, 2s));
  auto fifth = Open(*client, "/ws");
  ASSERT_TRUE(fifth->opened.WaitAtLeast(1, 2s));
  EXPECT_EQ(server_->open_connections(), 3u);
}

TEST_F(WebSocketTest, ReleasingTheLastHandleClosesNormally) {
  server_ = std::make_unique<HttpServer>(
      FastOptions(), [this](HttpRequest, std::shared_ptr<ResponseWriter> writer) {
        WebSocketHandlers h;
        h.on_close = [this](int code, std::string reason) { log_.OnClose(code, reason); };
        std::shared_ptr<WebSocket> ws = writer->AcceptWebSocket(QuickSocket(), std::move(h));
        ASSERT_NE(ws, nullptr);
        ws->SendText("hello and goodbye");
        // Nobody keeps `ws`: the connection closes with 1000 after the message.
      });
  ASSERT_TRUE(server_->Start().ok());
  auto client = MakeClient();
  auto conn = Open(*client, "/ws");
  ASSERT_TRUE(conn->closed.WaitAtLeast(1, 3s));
  EXPECT_EQ(conn->Messages(), std::vector<std::string>{"hello and goodbye"});
  EXPECT_EQ(conn->Close().code, websocket_close::kNormal);
  ASSERT_TRUE(log_.closed.WaitAtLeast(1, 2s));
}

TEST_F(WebSocketTest, ClientThatCannotConnectReportsUnavailable) {
  auto listener = std::make_unique<RawListener>();  // Bound, then closed: nobody listens.
  const uint16_t port = listener->port();
  listener.reset();
  WebSocketClientOptions o;
  o.port = port;
  o.socket = QuickSocket();
  WebSocketClient client(o);
  auto conn = Open(client, "/ws");
  ASSERT_TRUE(conn->closed.WaitAtLeast(1, 3s));
  EXPECT_EQ(conn->Close().code, websocket_close::kAbnormal);
  EXPECT_EQ(conn->Close().http_status, 0);
  EXPECT_FALSE(conn->Close().status.ok());
}

TEST_F(WebSocketTest, HandshakeTimeoutOnAServerThatNeverAnswers) {
  RawListener listener;
  WebSocketClientOptions o;
  o.port = listener.port();
  o.socket = QuickSocket();
  o.socket.handshake_timeout = 200ms;
  WebSocketClient client(o);
  auto conn = Open(client, "/ws");
  RawSocket accepted = listener.Accept(2s);
  ASSERT_TRUE(accepted.valid());
  ASSERT_TRUE(conn->closed.WaitAtLeast(1, 3s));
  EXPECT_EQ(conn->Close().status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(WaitFor([&] { return client.open_connections() == 0; }, 1s));
}

}  // namespace
}  // namespace swiftlet::http::testing
