#include "gateway/fake_site.h"

#include <chrono>
#include <thread>

#include "core/str_cat.h"

namespace swiftlet::gateway::testing {

using namespace std::chrono_literals;

FakeSite::FakeSite(std::string name, http::TlsServerOptions tls) : name_(std::move(name)), tls_(tls.enabled()) {
  http::HttpServerOptions o;
  o.port = 0;
  o.tls = std::move(tls);
  o.io_threads = 2;
  server_ = std::make_unique<http::HttpServer>(
      o, [this](http::HttpRequest r, std::shared_ptr<http::ResponseWriter> w) { Handle(std::move(r), std::move(w)); });
  if (!server_->Start().ok()) std::abort();
}

FakeSite::~FakeSite() { Stop(); }

void FakeSite::Stop() {
  Release();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_.clear();
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
  server_->Stop(200ms);
}

std::string FakeSite::url() const { return StrCat(tls_ ? "https" : "http", "://127.0.0.1:", server_->port()); }

int FakeSite::requests(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_[path];
}

void FakeSite::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
  }
  cv_.notify_all();
}

void FakeSite::DropHeld() {
  std::vector<std::shared_ptr<http::ResponseWriter>> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    held.swap(held_);
  }
}

int FakeSite::client_left() {
  std::lock_guard<std::mutex> lock(mu_);
  return client_left_;
}

std::vector<std::string> FakeSite::ws_messages() {
  std::lock_guard<std::mutex> lock(mu_);
  return ws_messages_;
}

int FakeSite::ws_close_code() {
  std::lock_guard<std::mutex> lock(mu_);
  return ws_close_code_;
}

void FakeSite::CloseWebSockets(int code, std::string reason) {
  std::vector<std::shared_ptr<http::WebSocket>> sockets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sockets = sockets_;
  }
  for (auto& s : sockets) s->Close(code, reason);
}

bool FakeSite::WaitUntil(const std::function<bool()>& pred) {
  // `pred` takes the lock itself; a change that lands between its check
  // and the wait is caught by the short wait's next check.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, 20ms);
  }
  return true;
}

void FakeSite::Handle(http::HttpRequest request, std::shared_ptr<http::ResponseWriter> writer) {
  const http::Headers json{{"Content-Type", "application/json"}};
  if (request.path == "/ready") {
    writer->Respond(ready_ ? 200 : 503, json, ready_ ? R"({"status":"ready"})" : R"({"error":{}})");
    return;
  }
  if (request.path == "/load") {
    writer->Respond(200, json, StrCat(R"({"waiting":0,"estimated_wait_ms":)", wait_ms_.load(), R"(,"draining":false})"));
    return;
  }
  // The mode is read before the request is counted: a test that changes
  // the mode once it sees the count changes it for the next request only.
  const Mode mode = mode_.load();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++requests_[request.path];
  }
  cv_.notify_all();
  if (http::IsWebSocketUpgrade(request)) {
    if (request.query.find("bad") != std::string::npos) {
      writer->Respond(400, json, R"({"error":{"message":"bad query"}})");
      return;
    }
    auto holder = std::make_shared<std::weak_ptr<http::WebSocket>>();
    http::WebSocketHandlers h;
    h.on_message = [this, holder](std::string text) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ws_messages_.push_back(text);
      }
      cv_.notify_all();
      if (auto ws = holder->lock()) ws->SendText(StrCat(name_, ":", text));
    };
    h.on_close = [this](int code, std::string) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ws_close_code_ = code;
      }
      cv_.notify_all();
    };
    auto ws = writer->AcceptWebSocket(http::WebSocketOptions{}, std::move(h));
    *holder = ws;
    std::lock_guard<std::mutex> lock(mu_);
    sockets_.push_back(ws);
    return;
  }
  const http::Headers sse{{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  switch (mode) {
    case Mode::kOk:
      writer->Respond(200, json, StrCat(R"({"site":")", name_, R"("})"));
      return;
    case Mode::kError500:
      writer->Respond(500, json, R"({"error":{"message":"boom","type":"server_error"}})");
      return;
    case Mode::kBusy429:
      writer->Respond(429, http::Headers{{"Content-Type", "application/json"}, {"Retry-After", "60"},
                                         {"retry-after-ms", StrCat(retry_after_ms_.load())}},
                      R"({"error":{"message":"busy","type":"rate_limit_error","code":"queue_full"}})");
      return;
    case Mode::kStream:
      writer->StartStream(200, sse);
      writer->WriteEvent(StrCat(name_, ":one"));
      // The second event waits for the test, so a gateway that buffered
      // the stream would hold the first one back and the test would hang.
      {
        std::lock_guard<std::mutex> lock(mu_);
        threads_.emplace_back([this, writer] {
          std::unique_lock<std::mutex> wait(mu_);
          cv_.wait_for(wait, 10s, [this] { return released_; });
          wait.unlock();
          writer->WriteEvent(StrCat(name_, ":two"));
          writer->WriteEvent("[DONE]");
          writer->End();
        });
      }
      return;
    case Mode::kStreamBreak: {
      writer->StartStream(200, sse);
      writer->WriteEvent(StrCat(name_, ":one"));
      // Held until the test has the first event (dropping it at once could
      // close the connection before the event is out).
      std::lock_guard<std::mutex> lock(mu_);
      held_.push_back(writer);
      return;
    }
    case Mode::kHeadersThenDrop:
      writer->StartStream(200, sse);
      return;
    case Mode::kHang: {
      writer->StartStream(200, sse);
      writer->WriteEvent(StrCat(name_, ":one"));
      writer->OnClose([this] {
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++client_left_;
        }
        cv_.notify_all();
      });
      std::lock_guard<std::mutex> lock(mu_);
      held_.push_back(writer);
      return;
    }
  }
}

}  // namespace swiftlet::gateway::testing
