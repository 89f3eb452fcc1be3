#include "server/key_limits.h"

#include <algorithm>
#include <cmath>

#include "core/clock.h"
#include "core/str_cat.h"

namespace swiftlet::server {

int64_t KeyLimiter::Bucket::Take(double cost, double capacity, double per_s, int64_t now_ns) {
  if (level < 0) {
    level = capacity;
  } else {
    level = std::min(capacity, level + per_s * static_cast<double>(now_ns - updated_ns) / 1e9);
  }
  updated_ns = now_ns;
  if (level >= cost) {
    level -= cost;
    return 0;
  }
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil((cost - level) / per_s * 1e3)));
}

KeyLimiter::Ticket::~Ticket() { limiter_->Release(id_); }

LimitDecision KeyLimiter::Admit(const ApiKey& key, int64_t now_ns, std::shared_ptr<Ticket>* ticket) {
  LimitDecision d;
  std::lock_guard<std::mutex> lock(mu_);
  State& s = keys_[key.id];
  if (key.max_concurrent > 0 && s.usage.in_flight >= key.max_concurrent) {
    d = {false, 100, StrCat("key ", key.id, " has ", key.max_concurrent, " requests in flight, its limit"),
         "max_concurrent"};
  } else if (key.requests_per_s > 0) {
    const int64_t wait = s.requests.Take(1, std::max(1.0, key.requests_per_s), key.requests_per_s, now_ns);
    if (wait > 0) {
      d = {false, wait, StrCat("key ", key.id, " is over its ", key.requests_per_s, " requests per second"),
           "requests_per_s"};
    }
  }
  if (!d.ok) {
    s.usage.refused += 1;
    return d;
  }
  s.usage.requests += 1;
  s.usage.in_flight += 1;
  *ticket = std::make_shared<Ticket>(this, key.id);
  return d;
}

LimitDecision KeyLimiter::ChargeTokens(const ApiKey& key, int64_t tokens, int64_t now_ns) {
  if (key.tokens_per_min <= 0) return {};
  std::lock_guard<std::mutex> lock(mu_);
  State& s = keys_[key.id];
  const double capacity = static_cast<double>(key.tokens_per_min);
  if (static_cast<double>(tokens) > capacity) {
    s.usage.refused += 1;
    return {false, 60'000,
            StrCat("the request asks up to ", tokens, " tokens; key ", key.id, " has ", key.tokens_per_min,
                   " per minute"),
            "tokens_per_min"};
  }
  const int64_t wait = s.tokens.Take(static_cast<double>(tokens), capacity, capacity / 60.0, now_ns);
  if (wait > 0) {
    s.usage.refused += 1;
    return {false, wait, StrCat("key ", key.id, " is over its ", key.tokens_per_min, " tokens per minute"),
            "tokens_per_min"};
  }
  return {};
}

void KeyLimiter::Settle(const ApiKey& key, int64_t prompt_tokens, int64_t completion_tokens, int64_t unused) {
  std::lock_guard<std::mutex> lock(mu_);
  State& s = keys_[key.id];
  s.usage.prompt_tokens += static_cast<uint64_t>(std::max<int64_t>(0, prompt_tokens));
  s.usage.completion_tokens += static_cast<uint64_t>(std::max<int64_t>(0, completion_tokens));
  if (unused > 0 && key.tokens_per_min > 0 && s.tokens.level >= 0) {
    s.tokens.level = std::min(static_cast<double>(key.tokens_per_min), s.tokens.level + static_cast<double>(unused));
  }
}

void KeyLimiter::Release(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  keys_[id].usage.in_flight -= 1;
}

std::vector<std::pair<std::string, KeyUsage>> KeyLimiter::Usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, KeyUsage>> out;
  for (const auto& [id, s] : keys_) out.emplace_back(id, s.usage);
  return out;
}

}  // namespace swiftlet::server
