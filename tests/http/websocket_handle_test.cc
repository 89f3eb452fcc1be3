// The application's side of a WebSocket without sockets: send-buffer
// accounting, the order of sends and closes, and the upgrade check, against
// a fake session that queues posted work for the test to run.
#include "http/websocket_handle.h"

#include <deque>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "http/websocket.h"

namespace swiftlet::http::internal {
namespace {

class FakeSession : public WsPort {
 public:
  bool Post(std::function<void()> fn) override {
    if (shut) return false;
    queue.push_back(std::move(fn));
    return true;
  }
  void Send(std::string text, size_t counted) override {
    events.push_back("send:" + text);
    sent_counted += counted;
  }
  void Close(int code, std::string reason, bool urgent) override {
    events.push_back("close:" + std::to_string(code) + ":" + reason + (urgent ? ":urgent" : ""));
  }
  void RunAll() {
    while (!queue.empty()) {
      auto fn = std::move(queue.front());
      queue.pop_front();
      fn();
    }
  }
  std::deque<std::function<void()>> queue;
  std::vector<std::string> events;
  size_t sent_counted = 0;
  bool shut = false;
};

struct HandleFixture {
  explicit HandleFixture(size_t soft = 10, size_t hard = 20)
      : session(std::make_shared<FakeSession>()),
        state(std::make_shared<WsSendState>(soft, hard)),
        handle(std::make_unique<WebSocketHandle>(session, state)) {}
  ~HandleFixture() {  // Posted closures hold the session: drop them to break the cycle.
    handle.reset();
    session->queue.clear();
  }
  std::shared_ptr<FakeSession> session;
  std::shared_ptr<WsSendState> state;
  std::unique_ptr<WebSocketHandle> handle;
};

TEST(WebSocketHandleTest, SoftLimitSaysSlowDownHardLimitCloses) {
  HandleFixture f(10, 20);
  EXPECT_TRUE(f.handle->SendText("12345678"));   // 8
  EXPECT_FALSE(f.handle->SendText("12345678"));  // 16: queued, past soft
  EXPECT_FALSE(f.handle->closed());
  EXPECT_EQ(f.handle->buffered_bytes(), 16u);
  EXPECT_FALSE(f.handle->SendText("12345678"));  // 24 > 20: refused, closes
  EXPECT_TRUE(f.handle->closed());
  EXPECT_EQ(f.handle->buffered_bytes(), 16u);
  EXPECT_FALSE(f.handle->SendText("x"));
  f.session->RunAll();
  EXPECT_EQ(f.session->events,
            (std::vector<std::string>{"send:12345678", "send:12345678",
                                      "close:1008:send buffer full:urgent"}));
  EXPECT_EQ(f.session->sent_counted, 16u);
}

TEST(WebSocketHandleTest, CloseFollowsEarlierSendsAndRefusesLaterOnes) {
  HandleFixture f(100, 200);
  EXPECT_TRUE(f.handle->SendText("a"));
  EXPECT_TRUE(f.handle->SendText(""));  // An empty message is still a message.
  f.handle->Close(4001, "done");
  EXPECT_TRUE(f.handle->closed());
  EXPECT_FALSE(f.handle->SendText("b"));
  f.handle->Close(1000, "again");  // Ignored.
  f.session->RunAll();
  EXPECT_EQ(f.session->events,
            (std::vector<std::string>{"send:a", "send:", "close:4001:done"}));
}

TEST(WebSocketHandleTest, CodesThatMayNotBeSentBecomeNormal) {
  for (int code : {0, 999, 1004, 1005, 1006, 1015, 2999, 5000}) {
    HandleFixture f;
    f.handle->Close(code, "");
    f.session->RunAll();
    ASSERT_EQ(f.session->events.size(), 1u);
    EXPECT_EQ(f.session->events[0], "close:1000:") << code;
  }
}

TEST(WebSocketHandleTest, ReleasingAnOpenHandleClosesNormally) {
  HandleFixture f;
  f.handle->SendText("bye");
  f.handle.reset();
  f.session->RunAll();
  EXPECT_EQ(f.session->events, (std::vector<std::string>{"send:bye", "close:1000:"}));

  HandleFixture closed;  // Already closed: nothing more.
  closed.state->MarkClosed();
  closed.handle.reset();
  EXPECT_TRUE(closed.session->queue.empty());
}

TEST(WebSocketHandleTest, SendAfterTheIoShutDownIsRefusedAndUncounted) {
  HandleFixture f;
  f.session->shut = true;
  EXPECT_FALSE(f.handle->SendText("lost"));
  EXPECT_EQ(f.handle->buffered_bytes(), 0u);
}

TEST(WebSocketHandleTest, HardLimitHoldsForOneHugeMessage) {
  HandleFixture f(10, 20);
  EXPECT_FALSE(f.handle->SendText(std::string(21, 'x')));
  EXPECT_TRUE(f.handle->closed());
  EXPECT_EQ(f.handle->buffered_bytes(), 0u);
}

TEST(WebSocketHandleTest, TruncateUtf8KeepsWholeCharacters) {
  EXPECT_EQ(TruncateUtf8("short", 123), "short");
  EXPECT_EQ(TruncateUtf8("abcdef", 3), "abc");
  EXPECT_EQ(TruncateUtf8("a\xC3\xA9", 2), "a");               // é would be split
  EXPECT_EQ(TruncateUtf8("a\xC3\xA9", 3), "a\xC3\xA9");
  EXPECT_EQ(TruncateUtf8("\xE3\x81\x82\xE3\x81\x84", 5), "\xE3\x81\x82");  // あい
  EXPECT_EQ(TruncateUtf8("\xF0\x9F\x98\x80z", 3), "");         // an emoji
}

HttpRequest Upgrade() {
  HttpRequest r;
  r.method = "GET";
  r.target = "/v1/translate/stream?languages=en,ja";
  r.version = 11;
  r.headers = Headers{{"Host", "h"},
                      {"Upgrade", "websocket"},
                      {"Connection", "keep-alive, Upgrade"},
                      {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                      {"Sec-WebSocket-Version", "13"}};
  return r;
}

TEST(WebSocketUpgradeTest, RecognisesTheOpeningHandshake) {
  EXPECT_TRUE(IsWebSocketUpgrade(Upgrade()));
  HttpRequest r = Upgrade();
  r.headers.Set("upgrade", "WebSocket");
  r.headers.Set("connection", "upgrade");
  EXPECT_TRUE(IsWebSocketUpgrade(r));
}

TEST(WebSocketUpgradeTest, RejectsEverythingElse) {
  auto with = [](auto change) {
    HttpRequest r = Upgrade();
    change(r);
    return IsWebSocketUpgrade(r);
  };
  EXPECT_FALSE(with([](HttpRequest& r) { r.method = "POST"; }));
  EXPECT_FALSE(with([](HttpRequest& r) { r.version = 10; }));
  EXPECT_FALSE(with([](HttpRequest& r) { r.headers.Remove("host"); }));
  EXPECT_FALSE(with([](HttpRequest& r) { r.headers.Remove("upgrade"); }));
  EXPECT_FALSE(with([](HttpRequest& r) { r.headers.Set("Upgrade", "h2c"); }));
  EXPECT_FALSE(with([](HttpRequest& r) { r.headers.Set("Connection", "keep-alive"); }));
  EXPECT_FALSE(with([](HttpRequest& r) { r.headers.Remove("sec-websocket-key"); }));
  EXPECT_FALSE(with([](HttpRequest& r) { r.headers.Set("Sec-WebSocket-Key", "short=="); }));
  EXPECT_FALSE(with([](HttpRequest& r) {
    r.headers.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ!=");
  }));
  EXPECT_FALSE(with([](HttpRequest& r) { r.headers.Set("Sec-WebSocket-Version", "8"); }));
  EXPECT_FALSE(with([](HttpRequest& r) { r.headers.Remove("sec-websocket-version"); }));
}

TEST(WebSocketUpgradeTest, ProblemNamesWhatIsWrong) {
  auto problem = [](auto change) {
    HttpRequest r = Upgrade();
    change(r);
    return std::string(WebSocketUpgradeProblem(r));
  };
  EXPECT_EQ(problem([](HttpRequest&) {}), "");
  EXPECT_THAT(problem([](HttpRequest& r) { r.method = "POST"; }), ::testing::HasSubstr("GET"));
  EXPECT_THAT(problem([](HttpRequest& r) { r.headers.Remove("upgrade"); }), ::testing::HasSubstr("Upgrade"));
  EXPECT_THAT(problem([](HttpRequest& r) { r.headers.Set("Connection", "close"); }),
              ::testing::HasSubstr("Connection"));
  EXPECT_THAT(problem([](HttpRequest& r) { r.headers.Remove("sec-websocket-key"); }),
              ::testing::HasSubstr("Sec-WebSocket-Key"));
  EXPECT_THAT(problem([](HttpRequest& r) { r.headers.Set("Sec-WebSocket-Version", "8"); }),
              ::testing::HasSubstr("Sec-WebSocket-Version must be 13"));
}

TEST(WebSocketCloseCodeTest, SendableCodes) {
  for (int code : {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1014, 3000, 4999}) {
    EXPECT_TRUE(IsSendableCloseCode(code)) << code;
  }
  for (int code : {-1, 0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535}) {
    EXPECT_FALSE(IsSendableCloseCode(code)) << code;
  }
}

}  // namespace
}  // namespace swiftlet::http::internal
