// HTTPS and WSS end to end: the server with a certificate made at test
// time by the `openssl` command (test_pki.h), the project's clients
// verifying it, and `openssl s_client` as an independent TLS peer where a
// test needs one (a TLS 1.1 offer, the certificate a new connection sees).
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/str_cat.h"
#include "http/client.h"
#include "http/server.h"
#include "http/tls_options.h"
#include "http/websocket.h"
#include "http/websocket_client.h"
#include "raw_socket.h"
#include "server_fixture.h"
#include "test_pki.h"

namespace swiftlet::http::testing {
namespace {

using ::testing::HasSubstr;

// What `openssl s_client` says about one connection to 127.0.0.1:port.
CommandResult SClient(uint16_t port, const std::string& ca_file, const std::string& extra) {
  return RunCommand(StrCat("timeout 20 openssl s_client -connect 127.0.0.1:", port,
                           " -servername localhost -CAfile ", ca_file, " -verify_return_error ", extra,
                           " </dev/null"));
}

// The serial number of the certificate a new connection is shown ("1001").
std::string ServedSerial(uint16_t port, const std::string& ca_file) {
  CommandResult r = RunCommand(StrCat("timeout 20 openssl s_client -connect 127.0.0.1:", port,
                                      " -servername localhost -CAfile ", ca_file,
                                      " -verify_return_error </dev/null 2>/dev/null"
                                      " | openssl x509 -noout -serial"));
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out.rfind("serial=", 0) == 0 ? out.substr(7) : "(none: " + out + ")";
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pki = TestPki::Create();
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = std::make_unique<TestPki>(*std::move(pki));
    auto cert = pki_->IssueServerCert("server", "1001");
    ASSERT_TRUE(cert.ok()) << cert.status();
    cert_ = *cert;
  }

  void TearDown() override {
    if (server_) server_->Stop(0ms);
    server_.reset();
    workers_.JoinAll();
  }

  HttpServerOptions TlsOptions() {
    HttpServerOptions o = FastOptions();
    o.tls.cert_file = cert_.cert;
    o.tls.key_file = cert_.key;
    return o;
  }

  // /hello: 200 "hello"; /echo: the body back; /sse: three events; /ws: a
  // WebSocket that echoes.
  void StartServer(HttpServerOptions options) {
    server_ = std::make_unique<HttpServer>(
        std::move(options), [this](HttpRequest request, std::shared_ptr<ResponseWriter> writer) {
          if (request.path == "/hello") return (void)writer->Respond(200, {}, "hello");
          if (request.path == "/echo") return (void)writer->Respond(200, {}, request.body);
          if (request.path == "/sse") {
            workers_.Spawn([writer] {
              writer->StartStream(200, Headers{{"Content-Type", "text/event-stream"}});
              for (int i = 0; i < 3; ++i) {
                writer->WriteEvent(StrCat("{\"i\":", i, "}"));
                std::this_thread::sleep_for(5ms);
              }
              writer->WriteEvent("[DONE]");
              writer->End();
            });
            return;
          }
          if (request.path == "/ws" && IsWebSocketUpgrade(request)) {
            auto socket = std::make_shared<std::shared_ptr<WebSocket>>();
            WebSocketHandlers h;
            h.on_message = [socket](std::string text) { (*socket)->SendText("echo " + text); };
            h.on_close = [socket](int, std::string) { socket->reset(); };
            WebSocketOptions wo;
            wo.ping_interval = 300ms;
            *socket = writer->AcceptWebSocket(wo, std::move(h));
            return;
          }
          writer->Respond(404, {}, "no");
        });
    ASSERT_TRUE(server_->Start().ok());
  }

  HttpClientOptions ClientOptions(bool trust = true) {
    HttpClientOptions o;
    o.port = server_->port();
    o.idle_timeout = 5s;
    o.tls.use_tls = true;
    if (trust) o.tls.ca_file = pki_->ca_file();
    return o;
  }

  std::unique_ptr<TestPki> pki_;
  ServerCertFiles cert_;
  Workers workers_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(TlsTest, HttpsRequestsAndSseStream) {
  StartServer(TlsOptions());
  HttpClient client(ClientOptions());
  Fetched hello = Fetch(client, Get("/hello"));
  ASSERT_TRUE(hello.status.ok()) << hello.status;
  EXPECT_EQ(hello.response.status, 200);
  EXPECT_EQ(hello.response.body, "hello");

  // A body of many TLS records each way.
  ClientRequest post;
  post.target = "/echo";
  for (int i = 0; post.body.size() < (300 << 10); ++i) post.body += StrCat("line ", i, "\n");
  Fetched echo = Fetch(client, post);
  ASSERT_TRUE(echo.status.ok()) << echo.status;
  EXPECT_EQ(echo.response.body, post.body);
  EXPECT_TRUE(echo.response.reused_connection);

  Fetched sse = Fetch(client, Get("/sse"));
  ASSERT_TRUE(sse.status.ok()) << sse.status;
  EXPECT_EQ(sse.events, (std::vector<std::string>{"{\"i\":0}", "{\"i\":1}", "{\"i\":2}", "[DONE]"}));
}

TEST_F(TlsTest, LimitsStillHoldOverTls) {
  HttpServerOptions options = TlsOptions();
  options.max_body_bytes = 1000;
  StartServer(options);
  HttpClient client(ClientOptions());
  ClientRequest post;
  post.target = "/echo";
  post.body = std::string(5000, 'x');
  Fetched r = Fetch(client, post);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.response.status, 413);
}

TEST_F(TlsTest, WssEcho) {
  StartServer(TlsOptions());
  WebSocketClientOptions o;
  o.port = server_->port();
  o.socket.ping_interval = 300ms;
  o.tls.use_tls = true;
  o.tls.ca_file = pki_->ca_file();
  WebSocketClient client(o);
  Counter opened, received, closed;
  std::mutex mu;
  std::vector<std::string> messages;
  WebSocketClientClose end;
  WebSocketClientHandlers h;
  h.on_open = [&](const Headers&) { opened.Add(); };
  h.on_message = [&](std::string text) {
    {
      std::lock_guard lock(mu);
      messages.push_back(std::move(text));
    }
    received.Add();
  };
  h.on_close = [&](const WebSocketClientClose& c) {
    {
      std::lock_guard lock(mu);
      end = c;
    }
    closed.Add();
  };
  std::shared_ptr<WebSocket> ws = client.Connect("/ws", {}, std::move(h));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(ws->SendText(StrCat("m", i)));
  ASSERT_TRUE(opened.WaitAtLeast(1, 5s));
  ASSERT_TRUE(received.WaitAtLeast(20, 5s));
  {
    std::lock_guard lock(mu);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(messages[i], StrCat("echo m", i));
  }
  ws->Close(websocket_close::kNormal, "done");
  ASSERT_TRUE(closed.WaitAtLeast(1, 5s));
  std::lock_guard lock(mu);
  EXPECT_TRUE(end.status.ok()) << end.status;
  EXPECT_EQ(end.code, websocket_close::kNormal);
}

TEST_F(TlsTest, ClientsRefuseAServerTheyCannotVerify) {
  StartServer(TlsOptions());
  {  // The system's trust store does not know the test CA.
    HttpClient client(ClientOptions(/*trust=*/false));
    Fetched r = Fetch(client, Get("/hello"));
    EXPECT_TRUE(absl::IsUnavailable(r.status)) << r.status;
    EXPECT_THAT(r.status.message(), HasSubstr("certificate verify failed"));
    EXPECT_EQ(r.response.status, 0);
  }
  {  // Another CA's trust.
    auto other = TestPki::Create();
    ASSERT_TRUE(other.ok()) << other.status();
    HttpClientOptions o = ClientOptions();
    o.tls.ca_file = other->ca_file();
    HttpClient client(o);
    Fetched r = Fetch(client, Get("/hello"));
    EXPECT_TRUE(absl::IsUnavailable(r.status)) << r.status;
    EXPECT_THAT(r.status.message(), HasSubstr("certificate verify failed"));
  }
  {  // The right CA, the wrong name.
    HttpClientOptions o = ClientOptions();
    o.tls.server_name = "swiftlet.example";
    HttpClient client(o);
    Fetched r = Fetch(client, Get("/hello"));
    EXPECT_TRUE(absl::IsUnavailable(r.status)) << r.status;
    EXPECT_THAT(r.status.message(), HasSubstr("hostname mismatch"));
  }
  {  // And the same for wss.
    WebSocketClientOptions o;
    o.port = server_->port();
    o.tls.use_tls = true;
    WebSocketClient client(o);
    Counter closed;
    WebSocketClientClose end;
    WebSocketClientHandlers h;
    h.on_open = [](const Headers&) { ADD_FAILURE() << "opened without a trusted certificate"; };
    h.on_close = [&](const WebSocketClientClose& c) {
      end = c;
      closed.Add();
    };
    client.Connect("/ws", {}, std::move(h));
    ASSERT_TRUE(closed.WaitAtLeast(1, 5s));
    EXPECT_TRUE(absl::IsUnavailable(end.status)) << end.status;
    EXPECT_THAT(end.reason, HasSubstr("certificate verify failed"));
  }
  // A CA file that is not one fails every request with the reason.
  HttpClientOptions bad = ClientOptions();
  bad.tls.ca_file = cert_.key;
  EXPECT_THAT(CheckTlsClientOptions(bad.tls).message(), HasSubstr("no PEM certificate"));
  HttpClient client(bad);
  Fetched r = Fetch(client, Get("/hello"));
  EXPECT_TRUE(absl::IsInvalidArgument(r.status)) << r.status;
}

TEST_F(TlsTest, OnlyTls12AndLater) {
  StartServer(TlsOptions());
  // The client is told to allow TLS 1.1 (its own security level forbids
  // it by default), so the refusal is the server's.
  CommandResult old = SClient(server_->port(), pki_->ca_file(), "-tls1_1 -cipher DEFAULT@SECLEVEL=0");
  EXPECT_NE(old.exit_code, 0) << old.output;
  EXPECT_THAT(old.output, ::testing::AnyOf(HasSubstr("protocol version"),
                                           HasSubstr("unsupported protocol")));
  for (const char* version : {"-tls1_2", "-tls1_3"}) {
    CommandResult ok = SClient(server_->port(), pki_->ca_file(), version);
    EXPECT_EQ(ok.exit_code, 0) << version << ": " << ok.output;
    EXPECT_THAT(ok.output, HasSubstr("Verify return code: 0 (ok)")) << version;
  }
  // TLS 1.2 without forward secrecy or AEAD is refused too.
  CommandResult weak = SClient(server_->port(), pki_->ca_file(), "-tls1_2 -cipher AES128-SHA");
  EXPECT_NE(weak.exit_code, 0) << weak.output;
}

TEST_F(TlsTest, ReloadServesTheNewCertificateToNewConnectionsOnly) {
  StartServer(TlsOptions());
  EXPECT_EQ(ServedSerial(server_->port(), pki_->ca_file()), "1001");
  HttpClient client(ClientOptions());
  Fetched before = Fetch(client, Get("/hello"));
  ASSERT_TRUE(before.status.ok()) << before.status;

  auto renewed = pki_->IssueServerCert("renewed", "2002");
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  TlsServerOptions next;
  next.cert_file = renewed->cert;
  next.key_file = renewed->key;
  ASSERT_TRUE(server_->ReloadTls(next).ok());
  EXPECT_EQ(ServedSerial(server_->port(), pki_->ca_file()), "2002");

  // The connection made before the reload is still the client's and works.
  Fetched after = Fetch(client, Get("/hello"));
  ASSERT_TRUE(after.status.ok()) << after.status;
  EXPECT_TRUE(after.response.reused_connection);
  EXPECT_EQ(after.response.body, "hello");

  // A reload that fails (this key is not the certificate's) keeps the
  // certificate in use and says why.
  TlsServerOptions mismatched;
  mismatched.cert_file = cert_.cert;
  mismatched.key_file = renewed->key;
  absl::Status s = server_->ReloadTls(mismatched);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("does not match"));
  EXPECT_EQ(ServedSerial(server_->port(), pki_->ca_file()), "2002");

  // ReloadTls() reads the last files again: overwritten in place, as a
  // certificate renewal does.
  ASSERT_EQ(RunCommand(StrCat("cp ", cert_.cert, " ", renewed->cert, " && cp ", cert_.key, " ",
                              renewed->key)).exit_code, 0);
  ASSERT_TRUE(server_->ReloadTls().ok());
  EXPECT_EQ(ServedSerial(server_->port(), pki_->ca_file()), "1001");
  HttpClient fresh(ClientOptions());
  Fetched r = Fetch(fresh, Get("/hello"));
  ASSERT_TRUE(r.status.ok()) << r.status;
}

TEST_F(TlsTest, PlainHttpOnTheTlsPortGetsAPlain400) {
  StartServer(TlsOptions());
  RawSocket s = RawSocket::Connect(server_->port());
  ASSERT_TRUE(s.valid());
  ASSERT_TRUE(s.Send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"));
  ParsedResponse r = ReadResponse(s, 5s);
  ASSERT_TRUE(r.complete) << r.head;
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("HTTPS"));
  EXPECT_TRUE(s.ReadUntilClosed(5s));

  // The project's own client, forgetting https, gets the same answer.
  HttpClientOptions o = ClientOptions();
  o.tls.use_tls = false;
  HttpClient plain(o);
  Fetched f = Fetch(plain, Get("/hello"));
  ASSERT_TRUE(f.status.ok()) << f.status;
  EXPECT_EQ(f.response.status, 400);

  // The server still serves TLS clients.
  HttpClient client(ClientOptions());
  Fetched ok = Fetch(client, Get("/hello"));
  ASSERT_TRUE(ok.status.ok()) << ok.status;
}

TEST_F(TlsTest, HttpsClientAgainstAPlainPortFailsCleanly) {
  StartServer(FastOptions());
  HttpClient client(ClientOptions());
  Fetched r = Fetch(client, Get("/hello"));
  EXPECT_TRUE(absl::IsUnavailable(r.status)) << r.status;
  EXPECT_THAT(r.status.message(), HasSubstr("TLS handshake failed"));
}

TEST_F(TlsTest, AStalledHandshakeIsClosedByTheHeaderTimeout) {
  StartServer(TlsOptions());  // header_timeout 500 ms.
  RawSocket silent = RawSocket::Connect(server_->port());
  RawSocket partial = RawSocket::Connect(server_->port());
  ASSERT_TRUE(silent.valid() && partial.valid());
  ASSERT_TRUE(partial.Send(std::string("\x16\x03\x01\x02\x00", 5)));  // A record header, no body.
  EXPECT_TRUE(silent.ReadUntilClosed(10s));
  EXPECT_TRUE(partial.ReadUntilClosed(10s));
  EXPECT_TRUE(WaitFor([&] { return server_->open_connections() == 0; }, 5s));
}

TEST_F(TlsTest, StartFailsOnABadCertificateOrKey) {
  HttpServerOptions o = TlsOptions();
  o.tls.key_file = pki_->dir() + "/missing.key";
  HttpServer missing(o, [](HttpRequest, std::shared_ptr<ResponseWriter>) {});
  absl::Status s = missing.Start();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("missing.key"));

  o = TlsOptions();
  o.tls.cert_file = pki_->ca_file() + ".nothing";
  EXPECT_THAT(CheckTlsServerOptions(o.tls).message(), HasSubstr(".nothing"));
  o.tls.cert_file = cert_.key;  // A key where the certificate should be.
  EXPECT_THAT(CheckTlsServerOptions(o.tls).message(), HasSubstr("no PEM certificate"));
  EXPECT_TRUE(CheckTlsServerOptions(TlsOptions().tls).ok());

  HttpServer plain(FastOptions(), [](HttpRequest, std::shared_ptr<ResponseWriter>) {});
  ASSERT_TRUE(plain.Start().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(plain.ReloadTls()));
  plain.Stop(0ms);
}

}  // namespace
}  // namespace swiftlet::http::testing
