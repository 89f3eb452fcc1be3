// The websocket transport of the live-translation load: one connection per
// stream to /v1/translate/stream, comments sent as messages, each answer
// (a result or a drop notice) matched to its comment by id.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "api/translate_codec.h"
#include "core/str_cat.h"
#include "http/websocket_client.h"
#include "loadgen/comment_transport.h"

namespace swiftlet::loadgen {
namespace {

class WebSocketTransport final : public CommentTransport {
 public:
  WebSocketTransport(const CommentLoadOptions& o, CommentTracker& tracker) : o_(o), tracker_(tracker) {
    http::WebSocketClientOptions c;
    c.host = o.host;
    c.port = o.port;
    c.tls = o.tls;
    // Pings both ways: a server that vanishes is noticed.
    c.socket.max_message_bytes = 1 << 20;
    client_ = std::make_unique<http::WebSocketClient>(c);
  }

  absl::Status Open() {
    std::string languages;
    for (const std::string& l : o_.languages) languages += (languages.empty() ? "" : ",") + l;
    const std::string target =
        StrCat(o_.prefix, "/v1/translate/stream?languages=", languages, "&budget_ms=",
               std::max<int64_t>(1, o_.budget_ns / kNsPerMs), "&max_tokens=", o_.output_tokens, "&ignore_eos=1");
    for (int64_t s = 0; s < o_.streams; ++s) {
      http::WebSocketClientHandlers h;
      h.on_open = [this](const http::Headers&) {
        std::lock_guard<std::mutex> lock(mu_);
        ++opened_;
        cv_.notify_all();
      };
      h.on_message = [this](std::string text) { OnMessage(text); };
      h.on_close = [this](const http::WebSocketClientClose& close) {
        std::lock_guard<std::mutex> lock(mu_);
        ++closed_;
        if (close.http_status != 101 && first_error_.empty()) {
          first_error_ = StrCat("the stream upgrade failed (HTTP ", close.http_status, "): ",
                                close.http_body.substr(0, 300), close.status.message());
        }
        cv_.notify_all();
      };
      http::Headers headers;
      if (!o_.api_key.empty()) headers.Add("Authorization", "Bearer " + o_.api_key);
      sockets_.push_back(client_->Connect(target, std::move(headers), std::move(h)));
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(30),
                 [&] { return opened_ == o_.streams || !first_error_.empty(); });
    if (!first_error_.empty()) return absl::UnavailableError(first_error_);
    if (opened_ < o_.streams) return absl::DeadlineExceededError(StrCat(opened_, " of ", o_.streams, " streams opened"));
    return absl::OkStatus();
  }

  void Send(int64_t index, int64_t stream, const std::string& text) override {
    sockets_[static_cast<size_t>(stream)]->SendText(api::SerializeStreamComment({std::to_string(index), text}));
  }

  ~WebSocketTransport() override {
    for (auto& s : sockets_) s->Close();
    client_.reset();
  }

 private:
  void OnMessage(const std::string& text) {
    auto r = api::ParseStreamResult(text);
    if (!r.ok() || !r->error.empty()) return;  // Not an answer to a comment of ours.
    char* end = nullptr;
    const long long index = std::strtoll(r->id.c_str(), &end, 10);
    if (end == r->id.c_str() || *end != '\0') return;
    CommentTracker::Kind kind = CommentTracker::kResult;
    if (r->dropped == "late") kind = CommentTracker::kLate;
    if (r->dropped == "overflow") kind = CommentTracker::kOverflow;
    if (!r->dropped.empty() && r->dropped != "late" && r->dropped != "overflow") kind = CommentTracker::kFailed;
    tracker_.Answer(index, kind);
  }

  const CommentLoadOptions& o_;
  CommentTracker& tracker_;
  std::unique_ptr<http::WebSocketClient> client_;
  std::vector<std::shared_ptr<http::WebSocket>> sockets_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t opened_ = 0;
  int64_t closed_ = 0;
  std::string first_error_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CommentTransport>> MakeWebSocketTransport(const CommentLoadOptions& o,
                                                                         CommentTracker& tracker) {
  auto t = std::make_unique<WebSocketTransport>(o, tracker);
  SWIFTLET_RETURN_IF_ERROR(t->Open());
  return std::unique_ptr<CommentTransport>(std::move(t));
}

}  // namespace swiftlet::loadgen
