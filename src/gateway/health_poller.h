// Polls every site's GET /ready and GET /load on an interval, and feeds the
// answers to the site (gateway/site_health.h): /ready's round trip is the
// RTT sample, 200 ready, 503 draining, anything else (or no answer within
// the poll timeout) a failure; /load's `estimated_wait_ms` and `draining`
// are the published wait. A site has at most one poll outstanding. A poll
// that had to open its connection is repeated at once on the kept one: its
// round trip included the connect, and only stands in until then.
//
// Owns one thread that ticks every `interval`; each tick also runs
// `on_tick` (the gateway's housekeeping: retired sites, stream affinity),
// on that thread, which is a control thread in the sense of
// gateway/site_table.h.
//
// Threads: Start, WaitFirstRound and Stop from one control thread; the
// destructor stops.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "gateway/site.h"
#include "gateway/site_table.h"

namespace swiftlet::gateway {

class HealthPoller {
 public:
  HealthPoller(SiteTable& table, std::chrono::milliseconds interval, std::function<void()> on_tick);
  ~HealthPoller();

  HealthPoller(const HealthPoller&) = delete;
  HealthPoller& operator=(const HealthPoller&) = delete;

  void Start();
  // Blocks until every site present at Start has finished one poll (ok or
  // not), or `timeout` passed. True if they all did.
  bool WaitFirstRound(std::chrono::milliseconds timeout);
  void Stop();

  // Polls one site now (also used by tests). Returns at once.
  void PollSite(const std::shared_ptr<Site>& site);

 private:
  void Run();
  void RoundDone();
  void SendReady(Site* site, bool follow_up);
  void EndPoll(Site* site);

  SiteTable& table_;
  const std::chrono::milliseconds interval_;
  const std::function<void()> on_tick_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int first_round_left_ ABSL_GUARDED_BY(mu_) = 0;
};

// Parses a /load body: the estimated wait in ms (bounded to [0, 1 h]) and the
// draining flag. Error for a body that is not a JSON object with a numeric
// estimated_wait_ms.
struct PublishedLoad {
  double wait_ms = 0;
  bool draining = false;
};
absl::StatusOr<PublishedLoad> ParseLoad(std::string_view body);

}  // namespace swiftlet::gateway
