// A scripted site for the gateway tests: our HTTP server with a handler
// that answers /ready, /load and the API the way a test sets (no engine).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/server.h"
#include "http/websocket.h"

namespace swiftlet::gateway::testing {

class FakeSite {
 public:
  enum class Mode {
    kOk,               // 200 JSON {"site": NAME}
    kError500,         // 500
    kBusy429,          // 429 with retry-after-ms
    kStream,           // SSE: "one", "two", [DONE]; "two" waits for Release()
    kStreamBreak,      // SSE: "one", then the connection drops at DropHeld()
    kHeadersThenDrop,  // SSE headers, then the connection drops
    kHang,             // SSE: "one", then nothing until the client leaves
  };

  // With a certificate in `tls`, the site speaks only https and wss.
  explicit FakeSite(std::string name, http::TlsServerOptions tls = {});
  ~FakeSite();

  std::string url() const;
  const std::string& name() const { return name_; }
  void Stop();

  void set_mode(Mode m) { mode_ = m; }
  void set_wait_ms(double w) { wait_ms_ = w; }
  void set_ready(bool r) { ready_ = r; }
  void set_retry_after_ms(int ms) { retry_after_ms_ = ms; }

  // Requests seen on a path (the API only, not /ready or /load).
  int requests(const std::string& path);
  // Unblocks the kStream handler's second event.
  void Release();
  // Drops the held kStreamBreak / kHang writers unfinished: their
  // connections close.
  void DropHeld();
  // Times a kHang stream saw its client leave.
  int client_left();
  // WebSocket: texts received, and the close code the site saw.
  std::vector<std::string> ws_messages();
  int ws_close_code();
  // Closes every open WebSocket from the site's side.
  void CloseWebSockets(int code, std::string reason);
  // Blocks until `pred` holds (state changes notify), up to 10 s.
  bool WaitUntil(const std::function<bool()>& pred);

 private:
  void Handle(http::HttpRequest request, std::shared_ptr<http::ResponseWriter> writer);

  const std::string name_;
  const bool tls_;
  std::unique_ptr<http::HttpServer> server_;
  std::atomic<Mode> mode_{Mode::kOk};
  std::atomic<double> wait_ms_{0};
  std::atomic<bool> ready_{true};
  std::atomic<int> retry_after_ms_{60'000};
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> requests_;
  bool released_ = false;
  int client_left_ = 0;
  std::vector<std::string> ws_messages_;
  int ws_close_code_ = 0;
  std::vector<std::shared_ptr<http::WebSocket>> sockets_;
  std::vector<std::shared_ptr<http::ResponseWriter>> held_;  // kHang writers.
  std::vector<std::thread> threads_;                         // kStream second halves.
};

}  // namespace swiftlet::gateway::testing
