#include "http/exchange.h"

#include <utility>

#include "http/wire_format.h"

namespace swiftlet::http::internal {

bool Exchange::Advance(Phase from, Phase to) {
  return phase_.compare_exchange_strong(from, to, std::memory_order_acq_rel);
}

bool Exchange::CloseBeforeFinish() {
  Phase p = phase();
  while (p == Phase::kIdle || p == Phase::kStreaming) {
    if (phase_.compare_exchange_weak(p, Phase::kClosed, std::memory_order_acq_rel)) {
      std::vector<std::function<void()>> callbacks;
      {
        std::lock_guard lock(mu_);
        callbacks_fired_ = true;
        callbacks.swap(callbacks_);
      }
      for (auto& cb : callbacks) cb();
      return true;
    }
  }
  return false;
}

void Exchange::AddCloseCallback(std::function<void()> callback) {
  {
    std::lock_guard lock(mu_);
    if (!callbacks_fired_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

std::optional<size_t> Exchange::Reserve(size_t bytes) {
  size_t current = buffered_.load(std::memory_order_acquire);
  while (true) {
    if (current + bytes > hard_limit_) return std::nullopt;
    if (buffered_.compare_exchange_weak(current, current + bytes, std::memory_order_acq_rel)) {
      return current + bytes;
    }
  }
}

WriterImpl::WriterImpl(std::shared_ptr<ConnectionPort> port, std::shared_ptr<Exchange> exchange,
                       bool chunked, bool websocket_upgrade)
    : port_(std::move(port)),
      exchange_(std::move(exchange)),
      chunked_(chunked),
      websocket_upgrade_(websocket_upgrade) {}

WriterImpl::~WriterImpl() {
  Exchange::Phase p = exchange_->phase();
  if (p == Exchange::Phase::kIdle || p == Exchange::Phase::kStreaming) {
    port_->Post([port = port_, exchange = exchange_] { port->Abandon(exchange); });
  }
}

bool WriterImpl::PostPiece(Outgoing piece) {
  piece.exchange = exchange_;
  return port_->Post([port = port_, piece = std::move(piece)]() mutable {
    port->Send(std::move(piece));
  });
}

bool WriterImpl::Respond(int status, Headers headers, std::string body) {
  std::lock_guard lock(mu_);
  if (!exchange_->Advance(Exchange::Phase::kIdle, Exchange::Phase::kFinished)) return false;
  Outgoing piece;
  piece.head = OutgoingHead{status, std::move(headers), body.size()};
  // A whole response is not held to the send limits (its size is the
  // handler's choice), but it is counted while queued.
  const size_t counted = body.size();
  exchange_->ForceReserve(counted);
  piece.counted = counted;
  piece.data = std::move(body);
  piece.last = true;
  if (!PostPiece(std::move(piece))) {
    exchange_->Release(counted);
    return false;
  }
  return true;
}

bool WriterImpl::StartStream(int status, Headers headers) {
  std::lock_guard lock(mu_);
  if (!exchange_->Advance(Exchange::Phase::kIdle, Exchange::Phase::kStreaming)) return false;
  Outgoing piece;
  piece.head = OutgoingHead{status, std::move(headers), std::nullopt};
  return PostPiece(std::move(piece));
}

bool WriterImpl::Write(std::string_view data) {
  std::lock_guard lock(mu_);
  if (exchange_->phase() != Exchange::Phase::kStreaming || exchange_->cancelled()) return false;
  if (data.empty()) return true;
  Outgoing piece;
  if (chunked_) {
    AppendChunk(piece.data, data);
  } else {
    piece.data.assign(data);
  }
  std::optional<size_t> total = exchange_->Reserve(piece.data.size());
  if (!total) {
    exchange_->RequestCancel();
    port_->Post([port = port_, exchange = exchange_] { port->Abort(exchange); });
    return false;
  }
  const size_t counted = piece.data.size();
  piece.counted = counted;
  if (!PostPiece(std::move(piece))) {
    exchange_->Release(counted);
    return false;
  }
  return *total <= exchange_->soft_limit();
}

bool WriterImpl::WriteEvent(std::string_view data) { return Write(FrameSseEvent(data)); }

bool WriterImpl::End() {
  std::lock_guard lock(mu_);
  if (!exchange_->Advance(Exchange::Phase::kStreaming, Exchange::Phase::kFinished)) return false;
  Outgoing piece;
  if (chunked_) piece.data.assign(kLastChunk);
  piece.last = true;
  return PostPiece(std::move(piece));
}

std::shared_ptr<WebSocket> WriterImpl::AcceptWebSocket(WebSocketOptions options,
                                                       WebSocketHandlers handlers) {
  std::lock_guard lock(mu_);
  if (!websocket_upgrade_) return nullptr;
  // The upgrade finishes this exchange: no 500 when the writer goes, no
  // OnClose callbacks; the socket's on_close reports the end instead.
  if (!exchange_->Advance(Exchange::Phase::kIdle, Exchange::Phase::kFinished)) return nullptr;
  return port_->AcceptWebSocket(exchange_, std::move(options), std::move(handlers));
}

void WriterImpl::OnClose(std::function<void()> callback) {
  exchange_->AddCloseCallback(std::move(callback));
}

}  // namespace swiftlet::http::internal
