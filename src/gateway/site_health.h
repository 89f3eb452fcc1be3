// What the gateway knows about one site, as a state machine over events
// with explicit times (so tests script time instead of sleeping):
//
//  - Health polls (GET /ready, /load every interval): a site that fails
//    `eject_after_failures` polls in a row is ejected; an ejected site comes
//    back after `readmit_after_successes` good polls in a row. A site
//    answering 503 on /ready (or "draining": true on /load) is draining: it
//    gets no new work until a poll says ready again. Each poll's round trip
//    feeds the RTT estimate (an EWMA).
//  - Live traffic (circuit breaker): `breaker_failures` request failures in
//    a row (connect error, timeout, 5xx) open the breaker at once, faster
//    than polls could eject. It stays open at least `breaker_open_ns` and
//    until a health poll succeeds after it opened; then one trial request
//    (half-open) closes it again or reopens it. So a dead site gets no live
//    traffic once the breaker opens: only polls test it.
//  - 429 with Retry-After keeps the site out of the choice for that long.
//
// Not thread-safe: the owner (gateway/site.h) guards it with a mutex.
#pragma once

#include <cstdint>
#include <string>

namespace swiftlet::gateway {

struct HealthPolicy {
  int eject_after_failures = 3;
  int readmit_after_successes = 2;
  double rtt_alpha = 0.3;  // Weight of a new round trip in the EWMA.
  int breaker_failures = 3;
  int64_t breaker_open_ns = 5'000'000'000;
  int64_t max_retry_after_ns = 60'000'000'000;  // A longer Retry-After is cut to this.
  // Added to a site's score per request the gateway has in flight there:
  // the published wait is a poll old, this covers what was sent since.
  double in_flight_penalty_ms = 5.0;
};

enum class SiteState { kStarting, kUp, kDraining, kEjected };
enum class BreakerState { kClosed, kOpen, kHalfOpen };

const char* SiteStateName(SiteState state);      // "starting", "up", "draining", "ejected"
const char* BreakerStateName(BreakerState state);  // "closed", "open", "half_open"

class SiteHealth {
 public:
  explicit SiteHealth(const HealthPolicy& policy) : policy_(policy) {}

  // Health polls. `rtt_ns`: the poll's round trip; `fresh_connection`:
  // it paid for a new connection (TCP's own round trip, and on a cold path
  // more), so it only stands in until a poll on a kept connection replaces
  // it, and never enters the average.
  void PollReady(int64_t now_ns, int64_t rtt_ns, bool fresh_connection = false);
  void PollDraining(int64_t now_ns, int64_t rtt_ns, bool fresh_connection = false);
  void PollFailed(int64_t now_ns, std::string error);
  // From /load: the site's estimated wait for one new request, and its own
  // draining flag.
  void SetPublishedWait(double wait_ms, bool draining);

  // Live traffic. Chosen: the gateway sends a request there now (takes the
  // half-open trial). Then exactly one of Succeeded (an answer that is not
  // 5xx), Failed (connect error, timeout, 5xx) or Abandoned (the client left
  // first: no verdict).
  void Chosen(int64_t now_ns);
  // `freed_slot`: the site finished a request (not a 429), which frees the
  // capacity a pending Retry-After was waiting for, so the bench ends now.
  void RequestSucceeded(int64_t now_ns, bool freed_slot = false);
  void RequestFailed(int64_t now_ns, std::string error);
  void RequestAbandoned();
  // A 429: keep out of the choice for `delay_ns` (cut to max_retry_after_ns),
  // or until a request of ours there finishes (RequestSucceeded).
  void RetryAfter(int64_t now_ns, int64_t delay_ns);

  // May get new work now: up (not draining), RTT known, breaker closed (or
  // half-open with its trial free), no Retry-After pending.
  bool Eligible(int64_t now_ns) const;
  // When the site would be eligible again if only its Retry-After keeps it
  // out now; 0 otherwise.
  int64_t BenchedUntil(int64_t now_ns) const;

  SiteState state() const;
  BreakerState breaker(int64_t now_ns) const;
  bool rtt_known() const { return rtt_known_; }
  double rtt_ms() const { return rtt_ms_; }
  double wait_ms() const { return wait_ms_; }
  int64_t retry_after_left_ns(int64_t now_ns) const;
  int consecutive_poll_failures() const { return poll_failures_; }
  uint64_t ejections() const { return ejections_; }
  uint64_t breaker_trips() const { return breaker_trips_; }
  const std::string& last_error() const { return last_error_; }

  // Expected time to first token there: RTT + published wait + in-flight
  // penalty. Meaningful only with rtt_known().
  double ScoreMs(int64_t in_flight) const;

 private:
  void Up();

  const HealthPolicy policy_;
  bool started_ = false;  // Some poll succeeded once.
  bool ejected_ = false;
  bool draining_ = false;       // By /ready 503.
  bool load_draining_ = false;  // By /load.
  int poll_failures_ = 0;
  int poll_successes_ = 0;
  bool rtt_known_ = false;
  bool rtt_provisional_ = false;  // From a fresh connection only.
  double rtt_ms_ = 0;
  double wait_ms_ = 0;
  int64_t last_poll_ok_ns_ = 0;
  int64_t retry_until_ns_ = 0;
  // Breaker.
  int request_failures_ = 0;
  bool breaker_open_ = false;
  int64_t opened_ns_ = 0;
  bool trial_in_flight_ = false;
  uint64_t ejections_ = 0;
  uint64_t breaker_trips_ = 0;
  std::string last_error_;
};

}  // namespace swiftlet::gateway
