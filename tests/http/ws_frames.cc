#include "ws_frames.h"

#include <poll.h>
#include <sys/socket.h>

#include <cstdint>

namespace swiftlet::http::testing {
namespace {

constexpr unsigned char kMask[4] = {0x37, 0xfa, 0x21, 0x3d};
constexpr uint64_t kMaxFrame = 16 << 20;

// Parses one whole frame at the front of `bytes`; nullopt if incomplete.
// `bad` set for frames a server must not send.
std::optional<Frame> ParseFrame(std::string_view bytes, size_t* consumed, bool* bad) {
  if (bytes.size() < 2) return std::nullopt;
  auto byte = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  Frame f;
  f.fin = (byte(0) & 0x80) != 0;
  f.opcode = byte(0) & 0x0F;
  if ((byte(1) & 0x80) != 0) {
    *bad = true;
    return std::nullopt;
  }
  uint64_t len = byte(1) & 0x7F;
  size_t pos = 2;
  if (len == 126) {
    if (bytes.size() < 4) return std::nullopt;
    len = (uint64_t{byte(2)} << 8) | byte(3);
    pos = 4;
  } else if (len == 127) {
    if (bytes.size() < 10) return std::nullopt;
    len = 0;
    for (size_t i = 2; i < 10; ++i) len = (len << 8) | byte(i);
    pos = 10;
  }
  if (len > kMaxFrame) {
    *bad = true;
    return std::nullopt;
  }
  if (bytes.size() - pos < len) return std::nullopt;
  f.payload = std::string(bytes.substr(pos, len));
  *consumed = pos + len;
  return f;
}

}  // namespace

std::string UpgradeRequest(std::string_view target, std::string_view extra_headers) {
  std::string r = "GET ";
  r += target;
  r += " HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n";
  r += "Sec-WebSocket-Key: ";
  r += kRfcKey;
  r += "\r\nSec-WebSocket-Version: 13\r\n";
  r += extra_headers;
  r += "\r\n";
  return r;
}

std::string ClientFrame(int opcode, std::string_view payload, bool fin) {
  std::string f;
  f += static_cast<char>((fin ? 0x80 : 0x00) | (opcode & 0x0F));
  const uint64_t len = payload.size();
  if (len < 126) {
    f += static_cast<char>(0x80 | len);
  } else if (len <= 0xFFFF) {
    f += static_cast<char>(0x80 | 126);
    f += static_cast<char>(len >> 8);
    f += static_cast<char>(len & 0xFF);
  } else {
    f += static_cast<char>(0x80 | 127);
    for (int shift = 56; shift >= 0; shift -= 8) f += static_cast<char>((len >> shift) & 0xFF);
  }
  for (unsigned char m : kMask) f += static_cast<char>(m);
  for (size_t i = 0; i < payload.size(); ++i) {
    f += static_cast<char>(static_cast<unsigned char>(payload[i]) ^ kMask[i % 4]);
  }
  return f;
}

std::string ClosePayload(int code, std::string_view reason) {
  std::string p;
  p += static_cast<char>((code >> 8) & 0xFF);
  p += static_cast<char>(code & 0xFF);
  p += reason;
  return p;
}

int Frame::close_code() const {
  if (payload.size() < 2) return 0;
  return (static_cast<unsigned char>(payload[0]) << 8) | static_cast<unsigned char>(payload[1]);
}

std::optional<Frame> ReadFrame(RawSocket& socket, std::string& buffer,
                               std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    size_t consumed = 0;
    bool bad = false;
    std::optional<Frame> f = ParseFrame(buffer, &consumed, &bad);
    if (bad) return std::nullopt;
    if (f) {
      buffer.erase(0, consumed);
      return f;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    std::string more = socket.ReadSome(65536, left);
    if (more.empty()) return std::nullopt;
    buffer += more;
  }
}

RawSocket ConnectWebSocket(uint16_t port, std::string_view target, std::string* head,
                           std::string* buffer, int receive_buffer) {
  RawSocket socket = RawSocket::Connect(port, receive_buffer);
  if (!socket.valid() || !socket.Send(UpgradeRequest(target))) return RawSocket();
  std::string data = socket.ReadUntil("\r\n\r\n", std::chrono::seconds(3));
  size_t end = data.find("\r\n\r\n");
  if (end == std::string::npos || data.compare(0, 12, "HTTP/1.1 101") != 0) return RawSocket();
  *head = data.substr(0, end + 4);
  *buffer = data.substr(end + 4);
  return socket;
}

}  // namespace swiftlet::http::testing
