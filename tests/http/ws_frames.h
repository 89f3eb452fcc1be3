// WebSocket frames written and read by hand (RFC 6455 section 5), so tests
// can play a peer that the project's own code does not: a client that
// sends binary, a peer that never answers pings, bytes before the 101.
// Test-only; no Boost.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "raw_socket.h"

namespace swiftlet::http::testing {

inline constexpr int kOpText = 0x1;
inline constexpr int kOpBinary = 0x2;
inline constexpr int kOpClose = 0x8;
inline constexpr int kOpPing = 0x9;
inline constexpr int kOpPong = 0xA;

// The RFC's example key and the Sec-WebSocket-Accept it must produce
// (section 1.3), so the server's answer is checked against the RFC, not
// against our own hashing.
inline constexpr std::string_view kRfcKey = "dGhlIHNhbXBsZSBub25jZQ==";
inline constexpr std::string_view kRfcAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

// A client's upgrade request for `target` with kRfcKey.
std::string UpgradeRequest(std::string_view target, std::string_view extra_headers = "");

// One client frame (masked, as clients must).
std::string ClientFrame(int opcode, std::string_view payload, bool fin = true);
// A close frame's payload: the code, big-endian, then the reason.
std::string ClosePayload(int code, std::string_view reason = "");

struct Frame {
  int opcode = 0;
  bool fin = false;
  std::string payload;
  // For close frames: the code (0 if none) and reason.
  int close_code() const;
};

// Reads one frame from `socket`, keeping unread bytes in `buffer`; nullopt
// on timeout, on EOF, or on a frame a server must not send (masked, over
// 16 MiB).
std::optional<Frame> ReadFrame(RawSocket& socket, std::string& buffer,
                               std::chrono::milliseconds timeout);

// Connects and upgrades. On success returns the 101's head in `head` (and
// any bytes after it in `buffer`); an invalid socket otherwise.
RawSocket ConnectWebSocket(uint16_t port, std::string_view target, std::string* head,
                           std::string* buffer, int receive_buffer = 0);

}  // namespace swiftlet::http::testing
