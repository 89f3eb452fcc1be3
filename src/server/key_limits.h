// Per-key limits (server/api_keys.h), enforced when a request arrives:
// requests per second and tokens per minute as token buckets (a second's
// and a minute's worth of burst), and requests in flight. Per-key usage is
// counted for /metrics by key id. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "server/api_keys.h"

namespace swiftlet::server {

struct LimitDecision {
  bool ok = true;
  int64_t retry_after_ms = 0;  // When !ok.
  std::string message;         // When !ok: which limit.
  std::string code;            // "requests_per_s", "max_concurrent", "tokens_per_min"
};

struct KeyUsage {
  uint64_t requests = 0;   // Admitted past the key's limits.
  uint64_t refused = 0;    // Refused by the key's limits.
  uint64_t prompt_tokens = 0;
  uint64_t completion_tokens = 0;
  int64_t in_flight = 0;
};

class KeyLimiter {
 public:
  // Holds one in-flight slot of a key until destroyed.
  class Ticket {
   public:
    Ticket(KeyLimiter* limiter, std::string id) : limiter_(limiter), id_(std::move(id)) {}
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;

   private:
    KeyLimiter* limiter_;
    std::string id_;
  };

  // A request of `key` arrives: the rate and concurrency limits. On ok, the
  // ticket holds its slot.
  LimitDecision Admit(const ApiKey& key, int64_t now_ns, std::shared_ptr<Ticket>* ticket);
  // The work it asks (prompt tokens and its longest output) against
  // tokens per minute.
  LimitDecision ChargeTokens(const ApiKey& key, int64_t tokens, int64_t now_ns);
  // Usage once known; `unused` charged tokens go back to the bucket.
  void Settle(const ApiKey& key, int64_t prompt_tokens, int64_t completion_tokens, int64_t unused);

  std::vector<std::pair<std::string, KeyUsage>> Usage() const;

 private:
  struct Bucket {
    double level = -1;  // -1: full (not yet used).
    int64_t updated_ns = 0;
    // Takes `cost` if there; else the wait until there would be, in ms.
    int64_t Take(double cost, double capacity, double per_s, int64_t now_ns);
  };
  struct State {
    Bucket requests;
    Bucket tokens;
    KeyUsage usage;
  };
  void Release(const std::string& id);

  mutable std::mutex mu_;
  std::map<std::string, State> keys_ ABSL_GUARDED_BY(mu_);  // By key id; kept across reloads.
};

}  // namespace swiftlet::server
