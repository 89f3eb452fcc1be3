// The client against a scripted raw-socket server: responses split at
// awkward places, stale keep-alive connections, timeouts, size limits.
#include "http/client.h"

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "raw_socket.h"
#include "server_fixture.h"

namespace swiftlet::http::testing {
namespace {

HttpClientOptions To(const RawListener& listener) {
  HttpClientOptions o;
  o.port = listener.port();
  o.idle_timeout = 2s;
  return o;
}

// Sends `bytes` in pieces of the given sizes (cycled), pausing so each
// piece arrives in its own read.
void Trickle(RawSocket& s, std::string_view bytes, const std::vector<size_t>& sizes) {
  size_t i = 0;
  while (!bytes.empty()) {
    size_t n = std::min(sizes[i++ % sizes.size()], bytes.size());
    s.Send(bytes.substr(0, n));
    bytes.remove_prefix(n);
    std::this_thread::sleep_for(1ms);
  }
}

// Chunked framing written out by hand for the test.
std::string Chunk(std::string_view data) {
  char size[16];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return std::string(size) + std::string(data) + "\r\n";
}

const std::string kEvents =
    "data: {\"i\":0}\n\n"
    ": comment\r\n"
    "data: {\"i\":1}\r\n\r\n"
    "event: x\ndata: multi\ndata: line\n\n"
    "data: [DONE]\n\n";
const std::vector<std::string> kExpected = {"{\"i\":0}", "{\"i\":1}", "multi\nline", "[DONE]"};

TEST(HttpClientTest, SseSplitAcrossChunksAndReads) {
  RawListener listener;
  std::thread server([&] {
    RawSocket s = listener.Accept(2s);
    s.ReadUntil("\r\n\r\n", 2s);
    // Chunk boundaries inside "data:", inside "\r\n", inside the JSON.
    std::string body;
    size_t cuts[] = {3, 1, 7, 2, 11, 5, 1, 9};
    std::string_view rest = kEvents;
    for (size_t i = 0; !rest.empty(); ++i) {
      size_t n = std::min(cuts[i % 8], rest.size());
      body += Chunk(rest.substr(0, n));
      rest.remove_prefix(n);
    }
    body += "0\r\n\r\n";
    std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n";
    Trickle(s, head + body, {1, 4, 2, 13, 3});  // Chunk framing split across reads too.
    s.ReadUntilClosed(200ms);
  });
  HttpClient client(To(listener));
  int headers_status = 0;
  ClientRequest request;
  request.target = "/v1/completions";
  request.body = "{}";
  auto result = std::make_shared<Fetched>();
  Counter done;
  ClientCallbacks cb;
  cb.on_headers = [&](int status, const Headers& h) {
    headers_status = status;
    EXPECT_EQ(h.Get("content-type"), "text/event-stream");
  };
  cb.on_event = [&](std::string_view data) { result->events.emplace_back(data); };
  cb.on_done = [&](absl::Status s, ClientResponse r) {
    result->status = s;
    result->response = std::move(r);
    done.Add();
  };
  client.Send(request, std::move(cb));
  ASSERT_TRUE(done.WaitAtLeast(1, 5s));
  EXPECT_TRUE(result->status.ok()) << result->status;
  EXPECT_EQ(headers_status, 200);
  EXPECT_EQ(result->events, kExpected);
  EXPECT_EQ(result->response.events, kExpected.size());
  EXPECT_TRUE(result->response.body.empty());
  server.join();
}

TEST(HttpClientTest, SseUntilConnectionClose) {
  RawListener listener;
  std::thread server([&] {
    RawSocket s = listener.Accept(2s);
    s.ReadUntil("\r\n\r\n", 2s);
    Trickle(s, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
               "Connection: close\r\n\r\n" + kEvents, {5, 1, 3});
  });
  HttpClient client(To(listener));
  Fetched f = Fetch(client, Get("/stream"));
  server.join();
  EXPECT_TRUE(f.status.ok()) << f.status;
  EXPECT_EQ(f.events, kExpected);
}

TEST(HttpClientTest, RetriesOnceWhenAKeptConnectionWasClosed) {
  RawListener listener;
  std::thread server([&] {
    {
      RawSocket first = listener.Accept(2s);
      first.ReadUntil("\r\n\r\n", 2s);
      first.Send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      std::this_thread::sleep_for(20ms);
    }  // Closed while the client keeps it idle.
    RawSocket second = listener.Accept(2s);
    std::string request = second.ReadUntil("\r\n\r\n", 2s);
    EXPECT_NE(request.find("GET /again"), std::string::npos);
    second.Send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok2");
    second.ReadUntilClosed(200ms);
  });
  HttpClient client(To(listener));
  Fetched first = Fetch(client, Get("/first"));
  ASSERT_TRUE(first.status.ok()) << first.status;
  EXPECT_EQ(first.response.body, "ok");
  std::this_thread::sleep_for(100ms);  // The server's FIN arrives.
  Fetched again = Fetch(client, Get("/again"));
  EXPECT_TRUE(again.status.ok()) << again.status;
  EXPECT_EQ(again.response.body, "ok2");
  server.join();
}

TEST(HttpClientTest, IdleTimeoutAfterPartialStream) {
  RawListener listener;
  std::thread server([&] {
    RawSocket s = listener.Accept(2s);
    s.ReadUntil("\r\n\r\n", 2s);
    s.Send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
           "Transfer-Encoding: chunked\r\n\r\n" + Chunk("data: one\n\n"));
    s.ReadUntilClosed(3s);  // Then silence until the client gives up.
  });
  HttpClientOptions o = To(listener);
  o.idle_timeout = 200ms;
  HttpClient client(o);
  Fetched f = Fetch(client, Get("/"));
  server.join();
  EXPECT_EQ(f.status.code(), absl::StatusCode::kDeadlineExceeded) << f.status;
  EXPECT_EQ(f.response.status, 200);
  EXPECT_EQ(f.events, std::vector<std::string>{"one"});
}

TEST(HttpClientTest, RequestTimeoutCoversATricklingStream) {
  RawListener listener;
  std::thread server([&] {
    RawSocket s = listener.Accept(2s);
    s.ReadUntil("\r\n\r\n", 2s);
    s.Send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
           "Transfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 100; ++i) {  // A comment every 20 ms keeps it from going idle.
      if (!s.Send(Chunk(": tick\n"))) break;
      if (s.ReadUntilClosed(20ms)) break;
    }
  });
  HttpClientOptions o = To(listener);
  o.idle_timeout = 200ms;
  o.request_timeout = 400ms;
  HttpClient client(o);
  auto start = std::chrono::steady_clock::now();
  Fetched f = Fetch(client, Get("/"));
  auto took = std::chrono::steady_clock::now() - start;
  server.join();
  EXPECT_EQ(f.status.code(), absl::StatusCode::kDeadlineExceeded) << f.status;
  EXPECT_LT(took, 1500ms);
}

TEST(HttpClientTest, BodyLimit) {
  RawListener listener;
  std::thread server([&] {
    RawSocket s = listener.Accept(2s);
    s.ReadUntil("\r\n\r\n", 2s);
    s.Send("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'x'));
    s.ReadUntilClosed(2s);
  });
  HttpClientOptions o = To(listener);
  o.max_body_bytes = 1000;
  HttpClient client(o);
  Fetched f = Fetch(client, Get("/"));
  server.join();
  EXPECT_EQ(f.status.code(), absl::StatusCode::kResourceExhausted) << f.status;
}

TEST(HttpClientTest, DestroyingTheClientCancelsInFlightRequests) {
  RawListener listener;
  std::thread server([&] {
    RawSocket s = listener.Accept(2s);
    s.ReadUntilClosed(3s);  // Never answers.
  });
  absl::Status status;
  {
    HttpClient client(To(listener));
    ClientCallbacks cb;
    cb.on_done = [&](absl::Status s, ClientResponse) { status = s; };
    client.Send(Get("/"), std::move(cb));
    std::this_thread::sleep_for(100ms);
  }
  server.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace swiftlet::http::testing
