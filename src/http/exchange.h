// Internal to http/: the response side of one request/response exchange,
// shared between the ResponseWriter a handler holds and the connection
// that owns the socket. Plain C++ so the writer's ordering, accounting and
// close-callback logic compile (and are tested) without Beast.
//
// The connection implements ConnectionPort. WriterImpl turns each call
// into an Outgoing piece and posts it to the connection's strand;
// the connection writes pieces in order and tells the Exchange when it
// closes.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "http/message.h"
#include "http/response_writer.h"

namespace swiftlet::http::internal {

class Exchange {
 public:
  enum class Phase { kIdle, kStreaming, kFinished, kClosed };

  Exchange(size_t soft_limit, size_t hard_limit) : soft_limit_(soft_limit), hard_limit_(hard_limit) {}

  Phase phase() const { return phase_.load(std::memory_order_acquire); }
  // Writer side: kIdle -> kStreaming/kFinished, kStreaming -> kFinished.
  // False if the phase was not `from` (e.g. the connection closed first).
  bool Advance(Phase from, Phase to);

  // Connection side, on its strand: the connection closed. If the response
  // was not finished, moves to kClosed and runs the close callbacks (on
  // this thread); returns whether it did.
  bool CloseBeforeFinish();

  // Runs `callback` at once if already closed before finish, else keeps it
  // for CloseBeforeFinish. Thread-safe.
  void AddCloseCallback(std::function<void()> callback);

  // Send-buffer accounting, thread-safe. Reserve returns the new total, or
  // nullopt (nothing reserved) when it would pass the hard limit.
  std::optional<size_t> Reserve(size_t bytes);
  void ForceReserve(size_t bytes) { buffered_.fetch_add(bytes, std::memory_order_acq_rel); }
  void Release(size_t bytes) { buffered_.fetch_sub(bytes, std::memory_order_acq_rel); }
  size_t buffered() const { return buffered_.load(std::memory_order_acquire); }
  size_t soft_limit() const { return soft_limit_; }

  void RequestCancel() { cancel_requested_.store(true, std::memory_order_release); }
  bool cancelled() const {
    return cancel_requested_.load(std::memory_order_acquire) || phase() == Phase::kClosed;
  }

 private:
  const size_t soft_limit_;
  const size_t hard_limit_;
  std::atomic<Phase> phase_{Phase::kIdle};
  std::atomic<size_t> buffered_{0};
  std::atomic<bool> cancel_requested_{false};
  std::mutex mu_;
  bool callbacks_fired_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::function<void()>> callbacks_ ABSL_GUARDED_BY(mu_);
};

struct OutgoingHead {
  int status = 200;
  Headers headers;
  std::optional<size_t> content_length;  // nullopt: a stream
};

// One piece of a response, in the order the writer produced it.
struct Outgoing {
  std::shared_ptr<Exchange> exchange;
  std::optional<OutgoingHead> head;
  std::string data;    // Body bytes, already framed (chunked) for streams.
  size_t counted = 0;  // Bytes reserved in the exchange's send buffer.
  bool last = false;   // The response is complete after this piece.
};

class ConnectionPort {
 public:
  virtual ~ConnectionPort() = default;
  // Any thread: runs `fn` on the connection's strand later. False if the
  // server has shut down (fn is dropped).
  virtual bool Post(std::function<void()> fn) = 0;
  // On the strand: queue a piece (ignored unless its exchange is current).
  virtual void Send(Outgoing piece) = 0;
  // On the strand: close the connection if `exchange` is current.
  virtual void Abort(const std::shared_ptr<Exchange>& exchange) = 0;
  // On the strand: the writer was released unfinished.
  virtual void Abandon(const std::shared_ptr<Exchange>& exchange) = 0;
  // Any thread, with `exchange` already moved to kFinished by the writer:
  // start the upgrade (it completes on the strand). Null if the server's
  // I/O has shut down. The default, for fakes, refuses.
  virtual std::shared_ptr<WebSocket> AcceptWebSocket(const std::shared_ptr<Exchange>& exchange,
                                                     WebSocketOptions options,
                                                     WebSocketHandlers handlers) {
    (void)exchange;
    (void)options;
    (void)handlers;
    return nullptr;
  }
};

class WriterImpl final : public ResponseWriter {
 public:
  // `chunked`: frame stream data with chunked encoding (false for
  // HTTP/1.0 peers: the stream then ends with the connection).
  // `websocket_upgrade`: the request may be accepted as a WebSocket.
  WriterImpl(std::shared_ptr<ConnectionPort> port, std::shared_ptr<Exchange> exchange,
             bool chunked, bool websocket_upgrade = false);
  ~WriterImpl() override;

  bool Respond(int status, Headers headers, std::string body) override;
  bool StartStream(int status, Headers headers) override;
  bool Write(std::string_view data) override;
  bool WriteEvent(std::string_view data) override;
  bool End() override;
  void OnClose(std::function<void()> callback) override;
  bool cancelled() const override { return exchange_->cancelled(); }
  size_t buffered_bytes() const override { return exchange_->buffered(); }
  std::shared_ptr<WebSocket> AcceptWebSocket(WebSocketOptions options,
                                             WebSocketHandlers handlers) override;

 private:
  bool PostPiece(Outgoing piece);  // Requires mu_.

  const std::shared_ptr<ConnectionPort> port_;
  const std::shared_ptr<Exchange> exchange_;
  const bool chunked_;
  const bool websocket_upgrade_;
  // Held across phase check and post, so pieces from racing threads reach
  // the strand in phase order.
  std::mutex mu_;
};

}  // namespace swiftlet::http::internal
