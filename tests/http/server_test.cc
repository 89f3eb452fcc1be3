// The server's request side: whole responses, keep-alive, and every limit
// and timeout, driven by the project's client and by raw sockets.
#include "http/server.h"

#include <atomic>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "raw_socket.h"
#include "server_fixture.h"

namespace swiftlet::http::testing {
namespace {

using ::testing::HasSubstr;

// Echoes the request: method and body in the body, the rest in headers.
void Echo(HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
  Headers headers{{"Content-Type", "text/plain"},
                  {"X-Path", request.path},
                  {"X-Query", request.query},
                  {"X-Custom", std::string(request.headers.Get("x-custom").value_or("-"))}};
  writer->Respond(200, std::move(headers), request.method + ":" + request.body);
}

std::string GetRequest(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
}

class ServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions options, HttpHandler handler = Echo) {
    server_ = std::make_unique<HttpServer>(std::move(options), std::move(handler));
    ASSERT_TRUE(server_->Start().ok());
    HttpClientOptions co;
    co.port = server_->port();
    co.idle_timeout = 3s;
    client_ = std::make_unique<HttpClient>(co);
  }
  uint16_t port() const { return server_->port(); }

  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(ServerTest, WholeResponses) {
  StartServer(FastOptions());
  EXPECT_NE(port(), 0);
  ClientRequest post;
  post.target = "/echo?a=1&b=2";
  post.headers.Add("X-CUSTOM", "v");
  post.body = "{\"k\":1}";
  Fetched f = Fetch(*client_, post);
  ASSERT_TRUE(f.status.ok()) << f.status;
  EXPECT_EQ(f.response.status, 200);
  EXPECT_EQ(f.response.body, "POST:{\"k\":1}");
  EXPECT_EQ(f.response.headers.Get("x-path"), "/echo");
  EXPECT_EQ(f.response.headers.Get("X-QUERY"), "a=1&b=2");
  EXPECT_EQ(f.response.headers.Get("x-custom"), "v");

  RawSocket raw = RawSocket::Connect(port());
  ASSERT_TRUE(raw.Send(GetRequest("/raw")));
  ParsedResponse r = ReadResponse(raw, 2s);
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "GET:");
  EXPECT_THAT(r.head, HasSubstr("Content-Length: 4\r\n"));
}

TEST_F(ServerTest, KeepAliveReusesTheConnection) {
  StartServer(FastOptions());
  RawSocket raw = RawSocket::Connect(port());
  for (const char* path : {"/one", "/two"}) {
    ASSERT_TRUE(raw.Send(GetRequest(path)));
    ParsedResponse r = ReadResponse(raw, 2s);
    ASSERT_TRUE(r.complete) << path;
    EXPECT_THAT(r.head, HasSubstr(std::string("X-Path: ") + path));
  }
  // Pipelined: both requests in one send, answered in order.
  ASSERT_TRUE(raw.Send(GetRequest("/three") + GetRequest("/four")));
  std::string rest;
  ParsedResponse three = ReadResponse(raw, 2s, &rest);
  ParsedResponse four = ReadResponse(raw, 2s, &rest);
  EXPECT_THAT(three.head, HasSubstr("X-Path: /three"));
  EXPECT_THAT(four.head, HasSubstr("X-Path: /four"));
  EXPECT_EQ(server_->open_connections(), 1u);

  // The project's client reuses its connection too.
  ASSERT_TRUE(Fetch(*client_, Get("/a")).status.ok());
  Fetched second = Fetch(*client_, Get("/b"));
  ASSERT_TRUE(second.status.ok()) << second.status;
  EXPECT_TRUE(second.response.reused_connection);
  EXPECT_EQ(client_->open_connections(), 1u);

  // Connection: close is honoured.
  RawSocket closing = RawSocket::Connect(port());
  ASSERT_TRUE(closing.Send(GetRequest("/bye", "Connection: close\r\n")));
  std::string data;
  EXPECT_TRUE(closing.ReadUntilClosed(2s, &data));
  EXPECT_THAT(data, HasSubstr("Connection: close"));
}

TEST_F(ServerTest, HeadAndExpectContinue) {
  StartServer(FastOptions());
  RawSocket raw = RawSocket::Connect(port());
  ASSERT_TRUE(raw.Send("HEAD /h HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::string head = raw.ReadUntil("\r\n\r\n", 2s);
  EXPECT_THAT(head, HasSubstr("Content-Length: 5"));  // "HEAD:" not sent.
  ASSERT_TRUE(raw.Send("POST /c HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                       "Content-Length: 5\r\n\r\n"));
  std::string interim = raw.ReadUntil("\r\n\r\n", 2s);
  EXPECT_EQ(interim, "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(raw.Send("hello"));
  ParsedResponse r = ReadResponse(raw, 2s);
  EXPECT_EQ(r.body, "POST:hello");
}

TEST_F(ServerTest, MalformedRequestGets400AndClose) {
  StartServer(FastOptions());
  RawSocket raw = RawSocket::Connect(port());
  ASSERT_TRUE(raw.Send("GET / HTTP/1.1\r\nBad Header Line\r\n\r\n"));
  ParsedResponse r = ReadResponse(raw, 2s);
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(raw.ReadUntilClosed(2s));
}

TEST_F(ServerTest, BodyTooLargeIs413WithoutReadingIt) {
  HttpServerOptions o = FastOptions();
  o.max_body_bytes = 1024;
  // The body of the transport's own answers is the application's.
  o.error_body = [](int status, std::string_view message) {
    return ErrorBody{"application/x-test", "{\"error\":\"" + std::to_string(status) + " " + std::string(message) + "\"}"};
  };
  std::atomic<int> handled{0};
  StartServer(o, [&](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
    ++handled;
    Echo(std::move(r), std::move(w));
  });
  // Declares 10 MB, sends 100 bytes: the answer comes anyway.
  RawSocket raw = RawSocket::Connect(port());
  ASSERT_TRUE(raw.Send("POST /big HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n" +
                       std::string(100, 'x')));
  ParsedResponse r = ReadResponse(raw, 2s);
  EXPECT_EQ(r.status, 413);
  EXPECT_THAT(r.body, HasSubstr("{\"error\":\"413 "));
  EXPECT_THAT(r.head, HasSubstr("Content-Type: application/x-test"));
  EXPECT_TRUE(raw.ReadUntilClosed(2s));

  // A chunked body that grows past the limit.
  RawSocket chunked = RawSocket::Connect(port());
  std::string request = "POST /big HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 4; ++i) request += "200\r\n" + std::string(512, 'y') + "\r\n";
  ASSERT_TRUE(chunked.Send(request));
  EXPECT_EQ(ReadResponse(chunked, 2s).status, 413);

  // The project's client sees the answer too, and a body at the limit passes.
  ClientRequest post;
  post.target = "/big";
  post.body = std::string(2000, 'z');
  Fetched too_big = Fetch(*client_, post);
  EXPECT_EQ(too_big.response.status, 413) << too_big.status;
  post.body = std::string(1024, 'z');
  Fetched fits = Fetch(*client_, post);
  EXPECT_EQ(fits.response.status, 200) << fits.status;
  EXPECT_EQ(handled, 1);
}

TEST_F(ServerTest, HeaderTooLargeIs431) {
  HttpServerOptions o = FastOptions();
  o.max_header_bytes = 1024;
  StartServer(o);
  RawSocket raw = RawSocket::Connect(port());
  raw.Send(GetRequest("/", "X-Big: " + std::string(4000, 'h') + "\r\n"));
  ParsedResponse r = ReadResponse(raw, 2s);
  EXPECT_EQ(r.status, 431);
  // No error_body hook: the transport's plain-text default.
  EXPECT_THAT(r.head, HasSubstr("Content-Type: text/plain"));
  EXPECT_EQ(r.body.back(), '\n');
  EXPECT_TRUE(raw.ReadUntilClosed(2s));
  // Just under the limit is fine.
  RawSocket ok = RawSocket::Connect(port());
  ok.Send(GetRequest("/", "X-Big: " + std::string(900, 'h') + "\r\n"));
  EXPECT_EQ(ReadResponse(ok, 2s).status, 200);
}

// The limit counts the whole header, start line included, whether it
// arrives in one read or many (Beast alone counts the start line and the
// fields separately when they arrive together).
TEST_F(ServerTest, HeaderLimitCountsTheStartLineToo) {
  HttpServerOptions o = FastOptions();
  o.max_header_bytes = 1024;
  StartServer(o);
  // A header of exactly `size` bytes: half of it in the target.
  auto header_of = [](size_t size) {
    std::string request = GetRequest("/" + std::string(500, 'p'), "X-Pad: \r\n");
    request.insert(request.find("X-Pad: ") + 7, size - request.size(), 'v');
    return request;
  };
  ASSERT_EQ(header_of(1024).size(), 1024u);
  RawSocket at_limit = RawSocket::Connect(port());
  at_limit.Send(header_of(1024));
  EXPECT_EQ(ReadResponse(at_limit, 2s).status, 200);
  RawSocket over = RawSocket::Connect(port());
  over.Send(header_of(1025));
  EXPECT_EQ(ReadResponse(over, 2s).status, 431);
  RawSocket well_over = RawSocket::Connect(port());
  well_over.Send(header_of(1900));
  EXPECT_EQ(ReadResponse(well_over, 2s).status, 431);
  // Over the limit with the header not ended yet: answered at once, not at
  // the header timeout.
  RawSocket unterminated = RawSocket::Connect(port());
  std::string partial = header_of(1100);
  partial.resize(partial.size() - 2);
  unterminated.Send(partial);
  EXPECT_EQ(ReadResponse(unterminated, 2s).status, 431);
}

TEST_F(ServerTest, SlowLorisIsClosedAtTheHeaderTimeout) {
  HttpServerOptions o = FastOptions();
  o.header_timeout = 300ms;
  StartServer(o);
  RawSocket raw = RawSocket::Connect(port());
  auto start = std::chrono::steady_clock::now();
  std::string request = GetRequest("/", "X-Slow: " + std::string(200, 's') + "\r\n");
  bool closed = false;
  for (char c : request) {  // One byte every 20 ms would take 4+ s.
    if (!raw.Send(std::string(1, c)) || raw.ReadUntilClosed(20ms)) {
      closed = true;
      break;
    }
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(closed);
  EXPECT_LT(elapsed, 2s);
  EXPECT_TRUE(WaitFor([&] { return server_->open_connections() == 0; }, 2s));
}

TEST_F(ServerTest, IdleConnectionsAreClosed) {
  HttpServerOptions o = FastOptions();
  o.idle_timeout = 200ms;
  o.header_timeout = 200ms;
  StartServer(o);
  RawSocket used = RawSocket::Connect(port());
  ASSERT_TRUE(used.Send(GetRequest("/")));
  EXPECT_EQ(ReadResponse(used, 2s).status, 200);
  EXPECT_TRUE(used.ReadUntilClosed(3s));  // Keep-alive wait runs out.
  RawSocket silent = RawSocket::Connect(port());
  EXPECT_TRUE(silent.ReadUntilClosed(3s));  // Never sent a byte.
  EXPECT_TRUE(WaitFor([&] { return server_->open_connections() == 0; }, 2s));
}

TEST_F(ServerTest, MaxConnectionsIsEnforced) {
  HttpServerOptions o = FastOptions();
  o.max_connections = 2;
  o.idle_timeout = 5s;
  o.header_timeout = 5s;
  StartServer(o);
  RawSocket a = RawSocket::Connect(port());
  RawSocket b = RawSocket::Connect(port());
  ASSERT_TRUE(WaitFor([&] { return server_->open_connections() == 2; }, 2s));
  RawSocket c = RawSocket::Connect(port());
  ParsedResponse refused = ReadResponse(c, 2s);
  EXPECT_EQ(refused.status, 503);
  EXPECT_TRUE(c.ReadUntilClosed(2s));
  EXPECT_EQ(server_->open_connections(), 2u);
  // A slot that frees up is usable again.
  a.Close();
  ASSERT_TRUE(WaitFor([&] { return server_->open_connections() == 1; }, 2s));
  RawSocket d = RawSocket::Connect(port());
  ASSERT_TRUE(d.Send(GetRequest("/again")));
  EXPECT_EQ(ReadResponse(d, 2s).status, 200);
}

TEST_F(ServerTest, AbandonedWriterAnswers500) {
  StartServer(FastOptions(), [](HttpRequest, std::shared_ptr<ResponseWriter>) {});
  Fetched f = Fetch(*client_, Get("/nothing"));
  ASSERT_TRUE(f.status.ok()) << f.status;
  EXPECT_EQ(f.response.status, 500);
}

TEST_F(ServerTest, ClientHandlesManyConcurrentRequests) {
  StartServer(FastOptions());
  constexpr int kRequests = 200;
  Counter done;
  std::atomic<int> ok{0};
  for (int i = 0; i < kRequests; ++i) {
    ClientRequest r;
    r.target = "/n";
    r.body = std::to_string(i);
    ClientCallbacks cb;
    cb.on_done = [&, i](absl::Status s, ClientResponse resp) {
      if (s.ok() && resp.body == "POST:" + std::to_string(i)) ++ok;
      done.Add();
    };
    client_->Send(std::move(r), std::move(cb));
  }
  ASSERT_TRUE(done.WaitAtLeast(kRequests, 10s));
  EXPECT_EQ(ok, kRequests);
}

TEST_F(ServerTest, ClientTimesOutAndReportsConnectFailure) {
  // A handler that never answers, and a client with a short idle timeout.
  std::vector<std::shared_ptr<ResponseWriter>> held;
  std::mutex mu;
  StartServer(FastOptions(), [&](HttpRequest, std::shared_ptr<ResponseWriter> w) {
    std::lock_guard lock(mu);
    held.push_back(std::move(w));
  });
  HttpClientOptions co;
  co.port = port();
  co.idle_timeout = 200ms;
  HttpClient impatient(co);
  EXPECT_EQ(Fetch(impatient, Get("/slow")).status.code(), absl::StatusCode::kDeadlineExceeded);

  uint16_t closed_port = 0;
  {
    RawListener listener;  // Gone at the end of the scope: nothing listens there.
    closed_port = listener.port();
  }
  HttpClientOptions nowhere;
  nowhere.port = closed_port;
  nowhere.connect_timeout = 500ms;
  HttpClient lost(nowhere);
  EXPECT_EQ(Fetch(lost, Get("/")).status.code(), absl::StatusCode::kUnavailable);
  server_->Stop(0ms);
}

}  // namespace
}  // namespace swiftlet::http::testing
