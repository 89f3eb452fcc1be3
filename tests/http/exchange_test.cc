// The writer's ordering, accounting and close callbacks, against a fake
// connection that queues posted work for the test to run.
#include "http/exchange.h"

#include <atomic>
#include <deque>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace swiftlet::http::internal {
namespace {

class FakePort : public ConnectionPort {
 public:
  bool Post(std::function<void()> fn) override {
    if (shut) return false;
    queue.push_back(std::move(fn));
    return true;
  }
  void Send(Outgoing piece) override { sent.push_back(std::move(piece)); }
  void Abort(const std::shared_ptr<Exchange>&) override { ++aborts; }
  void Abandon(const std::shared_ptr<Exchange>&) override { ++abandons; }
  void RunAll() {
    while (!queue.empty()) {
      auto fn = std::move(queue.front());
      queue.pop_front();
      fn();
    }
  }
  std::deque<std::function<void()>> queue;
  std::vector<Outgoing> sent;
  int aborts = 0;
  int abandons = 0;
  bool shut = false;
};

struct Fixture {
  explicit Fixture(size_t soft = 1000, size_t hard = 4000, bool chunked = true)
      : port(std::make_shared<FakePort>()),
        exchange(std::make_shared<Exchange>(soft, hard)),
        writer(std::make_unique<WriterImpl>(port, exchange, chunked)) {}
  ~Fixture() {  // Posted closures hold the port: drop them to break the cycle.
    writer.reset();
    port->queue.clear();
    port->sent.clear();
  }
  std::shared_ptr<FakePort> port;
  std::shared_ptr<Exchange> exchange;
  std::unique_ptr<WriterImpl> writer;
};

TEST(ExchangeTest, WholeResponse) {
  Fixture f;
  EXPECT_TRUE(f.writer->Respond(404, Headers{{"X-A", "b"}}, "nope"));
  EXPECT_FALSE(f.writer->Respond(200, {}, "again"));
  EXPECT_FALSE(f.writer->StartStream(200, {}));
  EXPECT_FALSE(f.writer->Write("x"));
  EXPECT_FALSE(f.writer->End());
  EXPECT_EQ(f.writer->buffered_bytes(), 4u);
  f.port->RunAll();
  ASSERT_EQ(f.port->sent.size(), 1u);
  const Outgoing& p = f.port->sent[0];
  ASSERT_TRUE(p.head.has_value());
  EXPECT_EQ(p.head->status, 404);
  EXPECT_EQ(p.head->content_length, 4u);
  EXPECT_EQ(p.head->headers.Get("x-a"), "b");
  EXPECT_EQ(p.data, "nope");
  EXPECT_TRUE(p.last);
  EXPECT_EQ(p.exchange, f.exchange);
  f.exchange->Release(p.counted);
  EXPECT_EQ(f.writer->buffered_bytes(), 0u);
}

TEST(ExchangeTest, StreamPiecesInOrderAndFramed) {
  Fixture f;
  EXPECT_FALSE(f.writer->Write("early"));  // Not started.
  EXPECT_TRUE(f.writer->StartStream(200, {}));
  EXPECT_TRUE(f.writer->Write("abc"));
  EXPECT_TRUE(f.writer->Write(""));
  EXPECT_TRUE(f.writer->WriteEvent("{}"));
  EXPECT_TRUE(f.writer->End());
  EXPECT_FALSE(f.writer->Write("late"));
  f.port->RunAll();
  ASSERT_EQ(f.port->sent.size(), 4u);
  EXPECT_FALSE(f.port->sent[0].head->content_length.has_value());
  EXPECT_EQ(f.port->sent[1].data, "3\r\nabc\r\n");
  EXPECT_EQ(f.port->sent[2].data, "a\r\ndata: {}\n\n\r\n");
  EXPECT_EQ(f.port->sent[3].data, "0\r\n\r\n");
  EXPECT_TRUE(f.port->sent[3].last);
  EXPECT_EQ(f.port->sent[1].counted + f.port->sent[2].counted, f.writer->buffered_bytes());
}

TEST(ExchangeTest, UnchunkedStreamForHttp10) {
  Fixture f(1000, 4000, /*chunked=*/false);
  f.writer->StartStream(200, {});
  f.writer->Write("abc");
  f.writer->End();
  f.port->RunAll();
  ASSERT_EQ(f.port->sent.size(), 3u);
  EXPECT_EQ(f.port->sent[1].data, "abc");
  EXPECT_EQ(f.port->sent[2].data, "");
}

TEST(ExchangeTest, BackpressureThenCancelAtHardLimit) {
  Fixture f(/*soft=*/100, /*hard=*/300);
  f.writer->StartStream(200, {});
  std::string chunk(60, 'x');  // 66 bytes framed.
  EXPECT_TRUE(f.writer->Write(chunk));   // 66
  EXPECT_FALSE(f.writer->Write(chunk));  // 132 > soft: slow down...
  EXPECT_FALSE(f.writer->cancelled());   // ...but not cancelled.
  EXPECT_FALSE(f.writer->Write(chunk));  // 198
  EXPECT_FALSE(f.writer->Write(chunk));  // 264
  EXPECT_FALSE(f.writer->cancelled());
  EXPECT_EQ(f.writer->buffered_bytes(), 264u);
  EXPECT_FALSE(f.writer->Write(chunk));  // 330 > hard: dropped, cancelled.
  EXPECT_TRUE(f.writer->cancelled());
  EXPECT_EQ(f.writer->buffered_bytes(), 264u);
  EXPECT_FALSE(f.writer->Write("y"));
  f.port->RunAll();
  EXPECT_EQ(f.port->aborts, 1);
  EXPECT_EQ(f.port->sent.size(), 5u);  // Head and four chunks; the fifth was dropped.
}

TEST(ExchangeTest, DrainingReopensTheWindow) {
  Fixture f(100, 300);
  f.writer->StartStream(200, {});
  std::string chunk(60, 'x');
  f.writer->Write(chunk);
  EXPECT_FALSE(f.writer->Write(chunk));
  f.exchange->Release(132);  // The socket took both.
  EXPECT_TRUE(f.writer->Write(chunk));
}

TEST(ExchangeTest, CloseCallbacksRunExactlyOnce) {
  Fixture f;
  std::atomic<int> calls{0};
  f.writer->OnClose([&] { ++calls; });
  f.writer->OnClose([&] { calls += 10; });
  f.writer->StartStream(200, {});
  EXPECT_TRUE(f.exchange->CloseBeforeFinish());
  EXPECT_EQ(calls, 11);
  EXPECT_FALSE(f.exchange->CloseBeforeFinish());
  EXPECT_EQ(calls, 11);
  EXPECT_TRUE(f.writer->cancelled());
  f.writer->OnClose([&] { calls += 100; });  // Already closed: runs at once.
  EXPECT_EQ(calls, 111);
  EXPECT_FALSE(f.writer->Write("x"));
  EXPECT_FALSE(f.writer->End());
}

TEST(ExchangeTest, NoCallbackAfterFinish) {
  Fixture f;
  int calls = 0;
  f.writer->OnClose([&] { ++calls; });
  f.writer->Respond(200, {}, "ok");
  EXPECT_FALSE(f.exchange->CloseBeforeFinish());
  f.writer->OnClose([&] { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(f.writer->cancelled());
}

TEST(ExchangeTest, RacingRegistrationAndClose) {
  for (int round = 0; round < 200; ++round) {
    Fixture f;
    f.writer->StartStream(200, {});
    std::atomic<int> calls{0};
    std::thread registrar([&] {
      for (int i = 0; i < 50; ++i) f.writer->OnClose([&] { ++calls; });
    });
    f.exchange->CloseBeforeFinish();
    registrar.join();
    ASSERT_EQ(calls, 50) << "round " << round;
  }
}

TEST(ExchangeTest, ReleasedUnfinishedWriterIsReported) {
  Fixture idle;
  idle.writer.reset();
  idle.port->RunAll();
  EXPECT_EQ(idle.port->abandons, 1);

  Fixture done;
  done.writer->Respond(200, {}, "");
  done.writer.reset();
  done.port->RunAll();
  EXPECT_EQ(done.port->abandons, 0);
}

TEST(ExchangeTest, CallsFailAfterServerShutdown) {
  Fixture f;
  f.port->shut = true;
  EXPECT_FALSE(f.writer->Respond(200, {}, "x"));
  EXPECT_EQ(f.writer->buffered_bytes(), 0u);
}

}  // namespace
}  // namespace swiftlet::http::internal
