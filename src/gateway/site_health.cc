#include "gateway/site_health.h"

#include <algorithm>
#include <utility>

namespace swiftlet::gateway {
namespace {

constexpr size_t kMaxErrorBytes = 200;  // An upstream message is shown, not kept whole.

std::string Bounded(std::string s) {
  if (s.size() > kMaxErrorBytes) s.resize(kMaxErrorBytes);
  return s;
}

}  // namespace

const char* SiteStateName(SiteState state) {
  switch (state) {
    case SiteState::kStarting: return "starting";
    case SiteState::kUp: return "up";
    case SiteState::kDraining: return "draining";
    case SiteState::kEjected: return "ejected";
  }
  return "?";
}

const char* BreakerStateName(BreakerState state) {
  switch (state) {
    case BreakerState::kClosed: return "closed";
    case BreakerState::kOpen: return "open";
    case BreakerState::kHalfOpen: return "half_open";
  }
  return "?";
}

void SiteHealth::Up() {
  poll_failures_ = 0;
  ++poll_successes_;
  if (!started_) {
    // A fresh site is admitted on its first good poll; readmission after an
    // ejection needs several, so a flapping site does not bounce traffic.
    started_ = true;
    ejected_ = false;
  } else if (ejected_ && poll_successes_ >= policy_.readmit_after_successes) {
    ejected_ = false;
  }
}

void SiteHealth::PollReady(int64_t now_ns, int64_t rtt_ns, bool fresh_connection) {
  const double sample = static_cast<double>(std::max<int64_t>(rtt_ns, 0)) / 1e6;
  if (!rtt_known_ || (rtt_provisional_ && !fresh_connection)) {
    rtt_ms_ = sample;
    rtt_provisional_ = fresh_connection;
  } else if (!fresh_connection) {
    rtt_ms_ = policy_.rtt_alpha * sample + (1 - policy_.rtt_alpha) * rtt_ms_;
  }
  rtt_known_ = true;
  draining_ = false;
  last_poll_ok_ns_ = now_ns;
  Up();
}

void SiteHealth::PollDraining(int64_t now_ns, int64_t rtt_ns, bool fresh_connection) {
  // Reachable (so not a failure towards ejection), but no new work.
  PollReady(now_ns, rtt_ns, fresh_connection);
  draining_ = true;
}

void SiteHealth::PollFailed(int64_t /*now_ns*/, std::string error) {
  last_error_ = Bounded(std::move(error));
  poll_successes_ = 0;
  ++poll_failures_;
  if (!ejected_ && poll_failures_ >= policy_.eject_after_failures) {
    ejected_ = true;
    ++ejections_;
  }
}

void SiteHealth::SetPublishedWait(double wait_ms, bool draining) {
  wait_ms_ = std::max(0.0, wait_ms);
  load_draining_ = draining;
}

void SiteHealth::Chosen(int64_t now_ns) {
  if (breaker(now_ns) == BreakerState::kHalfOpen) trial_in_flight_ = true;
}

void SiteHealth::RequestSucceeded(int64_t now_ns, bool freed_slot) {
  // The Retry-After was the site's estimate of when a slot frees; a
  // finished request is that slot freeing. Waiting out the estimate
  // anyway idles a site that has room (a long estimate once left the
  // nearest site idle half the time under load).
  if (freed_slot) retry_until_ns_ = std::min(retry_until_ns_, now_ns);
  request_failures_ = 0;
  breaker_open_ = false;
  trial_in_flight_ = false;
}

void SiteHealth::RequestFailed(int64_t now_ns, std::string error) {
  last_error_ = Bounded(std::move(error));
  const bool trial = trial_in_flight_;
  trial_in_flight_ = false;
  ++request_failures_;
  if (trial || (!breaker_open_ && request_failures_ >= policy_.breaker_failures)) {
    if (!breaker_open_) ++breaker_trips_;
    breaker_open_ = true;
    opened_ns_ = now_ns;
  }
}

void SiteHealth::RequestAbandoned() { trial_in_flight_ = false; }

void SiteHealth::RetryAfter(int64_t now_ns, int64_t delay_ns) {
  delay_ns = std::clamp<int64_t>(delay_ns, 0, policy_.max_retry_after_ns);
  retry_until_ns_ = std::max(retry_until_ns_, now_ns + delay_ns);
}

SiteState SiteHealth::state() const {
  if (ejected_) return SiteState::kEjected;
  if (!started_) return SiteState::kStarting;
  if (draining_ || load_draining_) return SiteState::kDraining;
  return SiteState::kUp;
}

BreakerState SiteHealth::breaker(int64_t now_ns) const {
  if (!breaker_open_) return BreakerState::kClosed;
  if (now_ns - opened_ns_ >= policy_.breaker_open_ns && last_poll_ok_ns_ > opened_ns_) {
    return BreakerState::kHalfOpen;
  }
  return BreakerState::kOpen;
}

bool SiteHealth::Eligible(int64_t now_ns) const {
  if (state() != SiteState::kUp || !rtt_known_ || now_ns < retry_until_ns_) return false;
  switch (breaker(now_ns)) {
    case BreakerState::kClosed: return true;
    case BreakerState::kHalfOpen: return !trial_in_flight_;
    case BreakerState::kOpen: return false;
  }
  return false;
}

int64_t SiteHealth::BenchedUntil(int64_t now_ns) const {
  if (now_ns >= retry_until_ns_) return 0;
  return Eligible(retry_until_ns_) ? retry_until_ns_ : 0;
}

int64_t SiteHealth::retry_after_left_ns(int64_t now_ns) const {
  return std::max<int64_t>(0, retry_until_ns_ - now_ns);
}

double SiteHealth::ScoreMs(int64_t in_flight) const {
  return rtt_ms_ + wait_ms_ + static_cast<double>(std::max<int64_t>(in_flight, 0)) * policy_.in_flight_penalty_ms;
}

}  // namespace swiftlet::gateway
