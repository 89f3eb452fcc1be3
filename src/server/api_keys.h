// API keys (`serve --api-keys FILE`): who may call, in which class, within
// which limits. The file holds one JSON object per line — never a key,
// only its SHA-256:
//
//   {"id": "shop-eu", "sha256": "<64 hex>", "class": "interactive",
//    "requests_per_s": 20, "tokens_per_min": 120000, "max_concurrent": 16,
//    "models": ["*"], "admin": false}
//
// Only id and sha256 are required; a limit of 0 (or absent) is none;
// "models" lists the model ids the key may use ("*": any). Blank lines and
// lines starting with '#' are skipped. `swiftlet keys add` creates a key,
// prints it once and appends its line (AppendNewApiKey).
//
// A presented key is hashed and compared with every entry in constant time
// (the cost does not depend on which entry, or how much of one, matches).
// A table is immutable after loading; the server swaps in a new one on
// SIGHUP. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/request.h"

namespace swiftlet::server {

struct ApiKey {
  std::string id;      // 1..64 of [A-Za-z0-9._-]
  std::string sha256;  // 64 lower-case hex digits.
  LatencyClass latency_class = LatencyClass::kInteractive;  // The best class it may ask.
  double requests_per_s = 0;
  int64_t tokens_per_min = 0;
  int64_t max_concurrent = 0;
  std::vector<std::string> models = {"*"};
  bool admin = false;

  bool MayUseModel(std::string_view model) const;
};

class ApiKeyTable {
 public:
  // InvalidArgument naming `source` and the line for a malformed line, a
  // repeated id or a repeated hash.
  static absl::StatusOr<std::shared_ptr<const ApiKeyTable>> Parse(std::string_view text, std::string_view source);
  static absl::StatusOr<std::shared_ptr<const ApiKeyTable>> Load(const std::string& path);

  // The entry whose hash is the presented key's; nullptr when none.
  const ApiKey* Authenticate(std::string_view presented_key) const;
  const std::vector<ApiKey>& keys() const { return keys_; }

 private:
  std::vector<ApiKey> keys_;
};

// One line of the key file.
std::string ApiKeyLine(const ApiKey& key);

// A new random key ("sk-swiftlet-" and 48 hex digits).
absl::StatusOr<std::string> NewApiKey();

// Creates a key for `entry` (its sha256 is set here), appends its line to
// `path` (created 0600 when missing) and returns the key itself, which
// exists nowhere else. AlreadyExists when the id is taken.
absl::StatusOr<std::string> AppendNewApiKey(const std::string& path, ApiKey entry);

}  // namespace swiftlet::server
