// Who is calling: the API key a request authenticated with (server/
// api_keys.h), the in-flight slot it holds, and the cache scope its work
// runs in. Without --api-keys every caller is anonymous (key null, scope
// global).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/api_keys.h"
#include "server/key_limits.h"

namespace swiftlet::server {

struct Caller {
  std::shared_ptr<const ApiKeyTable> table;  // Keeps `key` alive across reloads.
  const ApiKey* key = nullptr;
  std::shared_ptr<KeyLimiter::Ticket> ticket;  // Released with the last copy.
  // Prefix and translation caches are shared only within a scope: the key
  // id (--prefix-cache-scope key), or "" (global).
  std::string scope;
  uint64_t cache_scope = 0;  // The engine's: 0 global, else derived from `scope`.
};

}  // namespace swiftlet::server
