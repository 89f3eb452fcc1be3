// The server's response side: chunked and SSE streams, client disconnects,
// backpressure and cancellation, graceful shutdown.
#include <algorithm>
#include <atomic>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "http/server.h"
#include "raw_socket.h"
#include "server_fixture.h"

namespace swiftlet::http::testing {
namespace {

using ::testing::HasSubstr;

Headers EventStream() {
  return Headers{{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
}

class StreamTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions options, HttpHandler handler) {
    server_ = std::make_unique<HttpServer>(std::move(options), std::move(handler));
    ASSERT_TRUE(server_->Start().ok());
    HttpClientOptions co;
    co.port = server_->port();
    co.idle_timeout = 3s;
    client_ = std::make_unique<HttpClient>(co);
  }
  void TearDown() override {
    workers_.JoinAll();
    client_.reset();
    server_.reset();
  }

  Workers workers_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(StreamTest, ChunkedStreamArrivesInOrder) {
  StartServer(FastOptions(), [this](HttpRequest, std::shared_ptr<ResponseWriter> w) {
    w->StartStream(200, Headers{{"Content-Type", "text/plain"}});
    workers_.Spawn([w] {
      for (int i = 0; i < 20; ++i) {
        w->Write("chunk" + std::to_string(i) + ";");
        std::this_thread::sleep_for(1ms);
      }
      w->End();
    });
  });
  std::string expected;
  for (int i = 0; i < 20; ++i) expected += "chunk" + std::to_string(i) + ";";

  RawSocket raw = RawSocket::Connect(server_->port());
  ASSERT_TRUE(raw.Send("GET /s HTTP/1.1\r\nHost: t\r\n\r\n"));
  ParsedResponse r = ReadResponse(raw, 3s);
  ASSERT_TRUE(r.complete);
  EXPECT_THAT(r.head, HasSubstr("Transfer-Encoding: chunked"));
  EXPECT_EQ(r.body, expected);

  Fetched f = Fetch(*client_, Get("/s"));
  ASSERT_TRUE(f.status.ok()) << f.status;
  EXPECT_EQ(f.response.body, expected);
}

TEST_F(StreamTest, ServerSentEventsArriveInOrder) {
  StartServer(FastOptions(), [this](HttpRequest, std::shared_ptr<ResponseWriter> w) {
    w->StartStream(200, EventStream());
    workers_.Spawn([w] {
      for (int i = 0; i < 50; ++i) w->WriteEvent("{\"i\":" + std::to_string(i) + "}");
      w->WriteEvent("[DONE]");
      w->End();
    });
  });
  Fetched f = Fetch(*client_, Get("/sse"));
  ASSERT_TRUE(f.status.ok()) << f.status;
  EXPECT_EQ(f.response.status, 200);
  ASSERT_EQ(f.events.size(), 51u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(f.events[i], "{\"i\":" + std::to_string(i) + "}");
  EXPECT_EQ(f.events[50], "[DONE]");
  // The keep-alive connection is good for another stream.
  Fetched again = Fetch(*client_, Get("/sse"));
  EXPECT_EQ(again.events.size(), 51u);
  EXPECT_TRUE(again.response.reused_connection);
}

// A handler that starts an event stream, sends one event and keeps the
// writer; OnClose counts.
struct HeldStream {
  std::mutex mu;
  std::shared_ptr<ResponseWriter> writer;
  Counter closes;
  HttpHandler Handler() {
    return [this](HttpRequest, std::shared_ptr<ResponseWriter> w) {
      w->OnClose([this] { closes.Add(); });
      w->StartStream(200, EventStream());
      w->WriteEvent("first");
      std::lock_guard lock(mu);
      writer = std::move(w);
    };
  }
  std::shared_ptr<ResponseWriter> Writer() {
    std::lock_guard lock(mu);
    return writer;
  }
};

TEST_F(StreamTest, ClientDisconnectFiresOnCloseOnce) {
  HeldStream held;
  StartServer(FastOptions(), held.Handler());
  Counter got_event, done;
  absl::Status status;
  ClientCallbacks cb;
  cb.on_event = [&](std::string_view) { got_event.Add(); };
  cb.on_done = [&](absl::Status s, ClientResponse) {
    status = s;
    done.Add();
  };
  uint64_t id = client_->Send(Get("/hold"), std::move(cb));
  ASSERT_TRUE(got_event.WaitAtLeast(1, 3s));
  client_->Cancel(id);
  ASSERT_TRUE(done.WaitAtLeast(1, 3s));
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(held.closes.WaitAtLeast(1, 3s));
  std::shared_ptr<ResponseWriter> w = held.Writer();
  EXPECT_TRUE(w->cancelled());
  EXPECT_FALSE(w->WriteEvent("after"));
  EXPECT_FALSE(w->End());
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(held.closes.value(), 1);
  Counter late;
  w->OnClose([&] { late.Add(); });  // Registered after the close: runs at once.
  EXPECT_EQ(late.value(), 1);

  // The same with a raw socket that just closes.
  HeldStream raw_held;
  server_.reset();
  StartServer(FastOptions(), raw_held.Handler());
  RawSocket raw = RawSocket::Connect(server_->port());
  ASSERT_TRUE(raw.Send("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_THAT(raw.ReadUntil("first", 2s), HasSubstr("data: first"));
  raw.Close();
  ASSERT_TRUE(raw_held.closes.WaitAtLeast(1, 3s));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(raw_held.closes.value(), 1);
  server_.reset();  // Before `held`: its handler refers to it.
}

TEST_F(StreamTest, FinishedResponseNeverFiresOnClose) {
  Counter closes;
  StartServer(FastOptions(), [&](HttpRequest, std::shared_ptr<ResponseWriter> w) {
    w->OnClose([&] { closes.Add(); });
    w->Respond(200, {}, "done");
  });
  RawSocket raw = RawSocket::Connect(server_->port());
  ASSERT_TRUE(raw.Send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_EQ(ReadResponse(raw, 2s).status, 200);
  raw.Close();
  ASSERT_TRUE(WaitFor([&] { return server_->open_connections() == 0; }, 2s));
  EXPECT_EQ(closes.value(), 0);
}

TEST_F(StreamTest, SlowReaderIsBackpressuredThenCancelled) {
  HttpServerOptions o = FastOptions();
  o.send_soft_limit = 64 << 10;
  o.send_hard_limit = 256 << 10;
  o.write_timeout = 5s;
  std::atomic<bool> saw_backpressure{false}, backpressure_before_cancel{false};
  std::atomic<bool> cancelled{false};
  std::atomic<size_t> max_buffered{0};
  std::atomic<size_t> bytes_written{0};
  Counter closes, producer_done;
  StartServer(o, [&](HttpRequest, std::shared_ptr<ResponseWriter> w) {
    w->OnClose([&] { closes.Add(); });
    w->StartStream(200, Headers{{"Content-Type", "application/octet-stream"}});
    workers_.Spawn([&, w] {
      const std::string chunk(16 << 10, 'b');
      for (int i = 0; i < 4096 && !w->cancelled(); ++i) {  // At most 64 MiB.
        bool ok = w->Write(chunk);
        if (ok) bytes_written += chunk.size();
        if (!ok && !w->cancelled()) {
          saw_backpressure = true;
          bytes_written += chunk.size();
        }
        if (w->cancelled() && saw_backpressure) backpressure_before_cancel = true;
        max_buffered = std::max<size_t>(max_buffered, w->buffered_bytes());
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      cancelled = w->cancelled();
      producer_done.Add();
    });
  });
  // A reader with a small receive buffer that takes 4 KiB every 20 ms.
  RawSocket raw = RawSocket::Connect(server_->port(), /*receive_buffer=*/8192);
  ASSERT_TRUE(raw.Send("GET /firehose HTTP/1.1\r\nHost: t\r\n\r\n"));
  size_t received = 0;
  while (producer_done.value() == 0) {
    received += raw.ReadSome(4096, 20ms).size();
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(producer_done.WaitAtLeast(1, 10s));
  EXPECT_TRUE(saw_backpressure);
  EXPECT_TRUE(backpressure_before_cancel);
  EXPECT_TRUE(cancelled);
  EXPECT_LE(max_buffered, o.send_hard_limit);
  EXPECT_TRUE(closes.WaitAtLeast(1, 3s));
  EXPECT_EQ(closes.value(), 1);
  EXPECT_LT(received, bytes_written.load());  // The reader really was behind.
}

TEST_F(StreamTest, GracefulShutdownLetsAStreamFinish) {
  StartServer(FastOptions(), [this](HttpRequest, std::shared_ptr<ResponseWriter> w) {
    w->StartStream(200, EventStream());
    workers_.Spawn([w] {
      for (int i = 0; i < 10; ++i) {
        w->WriteEvent(std::to_string(i));
        std::this_thread::sleep_for(30ms);
      }
      w->End();
    });
  });
  RawSocket idle = RawSocket::Connect(server_->port());
  Counter first_event, done;
  std::vector<std::string> events;
  absl::Status status;
  ClientCallbacks cb;
  cb.on_event = [&](std::string_view data) {
    events.emplace_back(data);
    first_event.Add();
  };
  cb.on_done = [&](absl::Status s, ClientResponse) {
    status = s;
    done.Add();
  };
  client_->Send(Get("/long"), std::move(cb));
  ASSERT_TRUE(first_event.WaitAtLeast(1, 3s));
  auto start = std::chrono::steady_clock::now();
  server_->Stop(5s);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 3s);  // Returned when the stream ended, not at the deadline.
  ASSERT_TRUE(done.WaitAtLeast(1, 3s));
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(events.size(), 10u);
  EXPECT_TRUE(idle.ReadUntilClosed(500ms));  // Idle keep-alive closed at once.
  RawSocket late = RawSocket::Connect(server_->port());
  EXPECT_FALSE(late.valid());  // No longer accepting.
}

TEST_F(StreamTest, GracefulShutdownCancelsAtTheDeadline) {
  HeldStream held;
  StartServer(FastOptions(), held.Handler());
  Counter first_event, done;
  absl::Status status;
  ClientCallbacks cb;
  cb.on_event = [&](std::string_view) { first_event.Add(); };
  cb.on_done = [&](absl::Status s, ClientResponse) {
    status = s;
    done.Add();
  };
  client_->Send(Get("/forever"), std::move(cb));
  ASSERT_TRUE(first_event.WaitAtLeast(1, 3s));
  auto start = std::chrono::steady_clock::now();
  server_->Stop(300ms);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 3s);
  EXPECT_EQ(held.closes.value(), 1);
  EXPECT_TRUE(held.Writer()->cancelled());
  EXPECT_FALSE(held.Writer()->WriteEvent("too late"));
  ASSERT_TRUE(done.WaitAtLeast(1, 3s));
  EXPECT_FALSE(status.ok());  // The stream was cut short.
  server_.reset();
}

}  // namespace
}  // namespace swiftlet::http::testing
