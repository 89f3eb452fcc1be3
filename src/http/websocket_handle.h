// Internal to http/: the thread-safe half of one WebSocket connection, the
// handle the application holds (a WebSocket), and the send-buffer state it
// shares with the Beast session that owns the socket
// (websocket_session.cc). Plain C++, so the accounting and the order of
// sends and closes compile, and are tested, without Beast.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "http/websocket.h"

namespace swiftlet::http::internal {

// Shared by a handle and its session; thread-safe.
class WsSendState {
 public:
  WsSendState(size_t soft_limit, size_t hard_limit)
      : soft_limit_(soft_limit), hard_limit_(hard_limit) {}

  // The new total, or nullopt (nothing reserved) past the hard limit.
  std::optional<size_t> Reserve(size_t bytes);
  void Release(size_t bytes) { buffered_.fetch_sub(bytes, std::memory_order_acq_rel); }
  size_t buffered() const { return buffered_.load(std::memory_order_acquire); }
  size_t soft_limit() const { return soft_limit_; }

  // No more sends from now on; true for the first caller only.
  bool MarkClosed() { return !closed_.exchange(true, std::memory_order_acq_rel); }
  bool closed() const { return closed_.load(std::memory_order_acquire); }

 private:
  const size_t soft_limit_;
  const size_t hard_limit_;
  std::atomic<size_t> buffered_{0};
  std::atomic<bool> closed_{false};
};

// The session as its handle sees it.
class WsPort {
 public:
  virtual ~WsPort() = default;
  // Any thread: runs `fn` on the connection's strand later. False (fn
  // dropped) once the I/O behind it has shut down.
  virtual bool Post(std::function<void()> fn) = 0;
  // On the strand: one text message whose `counted` bytes were reserved.
  virtual void Send(std::string text, size_t counted) = 0;
  // On the strand: close with `code` after the queued messages, or at once
  // dropping what is not yet being written (`urgent`).
  virtual void Close(int code, std::string reason, bool urgent) = 0;
};

class WebSocketHandle final : public WebSocket {
 public:
  WebSocketHandle(std::shared_ptr<WsPort> port, std::shared_ptr<WsSendState> state)
      : port_(std::move(port)), state_(std::move(state)) {}
  // Closes with 1000 if still open (see WebSocket).
  ~WebSocketHandle() override;

  bool SendText(std::string text) override;
  void Close(int code, std::string reason) override;
  bool closed() const override { return state_->closed(); }
  size_t buffered_bytes() const override { return state_->buffered(); }

 private:
  const std::shared_ptr<WsPort> port_;
  const std::shared_ptr<WsSendState> state_;
  // Held across the closed check and the post, so a Close posted after a
  // SendText that returned true reaches the strand after its message.
  std::mutex mu_;
};

// `text` cut to at most `max_bytes`, never inside a UTF-8 sequence (close
// reasons must stay valid UTF-8 and fit in 123 bytes).
std::string TruncateUtf8(std::string text, size_t max_bytes);

}  // namespace swiftlet::http::internal
