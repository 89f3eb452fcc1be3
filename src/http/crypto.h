// The few cryptographic primitives the server needs (OpenSSL behind a plain
// header; DESIGN.md keeps OpenSSL's headers in http/): SHA-256 digests of
// API keys and of audited content, a constant-time comparison, and random
// tokens for new API keys. Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace swiftlet::http {

// SHA-256 of `data`, as 64 lower-case hex digits.
std::string Sha256Hex(std::string_view data);

// Equal contents, in time that depends only on the lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// `bytes` bytes from the operating system's CSPRNG, as lower-case hex.
// Internal on failure (no entropy source).
absl::StatusOr<std::string> RandomHex(size_t bytes);

}  // namespace swiftlet::http
