#include "http/websocket_handle.h"

#include <utility>

namespace swiftlet::http::internal {

std::optional<size_t> WsSendState::Reserve(size_t bytes) {
  size_t current = buffered_.load(std::memory_order_acquire);
  while (true) {
    if (bytes > hard_limit_ || current > hard_limit_ - bytes) return std::nullopt;
    if (buffered_.compare_exchange_weak(current, current + bytes, std::memory_order_acq_rel)) {
      return current + bytes;
    }
  }
}

WebSocketHandle::~WebSocketHandle() {
  if (state_->MarkClosed()) {
    port_->Post([port = port_] { port->Close(websocket_close::kNormal, "", false); });
  }
}

bool WebSocketHandle::SendText(std::string text) {
  std::lock_guard lock(mu_);
  if (state_->closed()) return false;
  const size_t counted = text.size();
  std::optional<size_t> total = state_->Reserve(counted);
  if (!total) {
    // A peer that reads this slowly is cut off rather than buffered for.
    if (state_->MarkClosed()) {
      port_->Post([port = port_] {
        port->Close(websocket_close::kPolicyViolation, "send buffer full", true);
      });
    }
    return false;
  }
  if (!port_->Post([port = port_, text = std::move(text), counted]() mutable {
        port->Send(std::move(text), counted);
      })) {
    state_->Release(counted);
    return false;
  }
  return *total <= state_->soft_limit();
}

void WebSocketHandle::Close(int code, std::string reason) {
  std::lock_guard lock(mu_);
  if (!state_->MarkClosed()) return;
  if (!IsSendableCloseCode(code)) code = websocket_close::kNormal;
  port_->Post([port = port_, code, reason = std::move(reason)]() mutable {
    port->Close(code, std::move(reason), false);
  });
}

std::string TruncateUtf8(std::string text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  // Step back over continuation bytes (10xxxxxx) to the start of the
  // sequence that would be split, and cut before it.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  return text;
}

}  // namespace swiftlet::http::internal
