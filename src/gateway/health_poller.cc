#include "gateway/health_poller.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/str_cat.h"

namespace swiftlet::gateway {
namespace {

constexpr double kMaxWaitMs = 3'600'000;

http::ClientRequest Get(std::string target) {
  http::ClientRequest r;
  r.method = "GET";
  r.target = std::move(target);
  return r;
}

}  // namespace

absl::StatusOr<PublishedLoad> ParseLoad(std::string_view body) {
  // The poll client bounds the body (64 KiB); nlohmann's parser is
  // iterative, so depth cannot blow the stack.
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return absl::InvalidArgumentError("/load: not a JSON object");
  auto wait = j.find("estimated_wait_ms");
  if (wait == j.end() || !wait->is_number()) {
    return absl::InvalidArgumentError("/load: no numeric estimated_wait_ms");
  }
  PublishedLoad load;
  const double w = wait->get<double>();
  load.wait_ms = std::isfinite(w) ? std::clamp(w, 0.0, kMaxWaitMs) : kMaxWaitMs;
  if (auto d = j.find("draining"); d != j.end() && d->is_boolean()) load.draining = d->get<bool>();
  return load;
}

HealthPoller::HealthPoller(SiteTable& table, std::chrono::milliseconds interval, std::function<void()> on_tick)
    : table_(table), interval_(interval), on_tick_(std::move(on_tick)) {}

HealthPoller::~HealthPoller() { Stop(); }

void HealthPoller::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    first_round_left_ = static_cast<int>(table_.sites().size());
  }
  thread_ = std::thread([this] { Run(); });
}

bool HealthPoller::WaitFirstRound(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return first_round_left_ <= 0 || stop_; }) && !stop_;
}

void HealthPoller::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HealthPoller::RoundDone() {
  std::lock_guard<std::mutex> lock(mu_);
  if (first_round_left_ > 0 && --first_round_left_ == 0) cv_.notify_all();
}

void HealthPoller::Run() {
  bool first = true;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    for (const auto& site : table_.sites()) PollSite(site);
    if (!first && on_tick_) on_tick_();
    first = false;
    lock.lock();
    cv_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

void HealthPoller::PollSite(const std::shared_ptr<Site>& site) {
  if (!site->TryStartPoll()) return;  // The last one is still out (it ends within the poll timeout).
  // The callbacks hold the site by plain pointer: they run on the site's
  // own poll client, which the site destroys (running what is pending)
  // before it goes, so the pointer outlives them. A counted reference
  // would keep a retired site alive, and could be the last one, released
  // on the very thread its destruction must join.
  SendReady(site.get(), /*follow_up=*/false);
}

void HealthPoller::EndPoll(Site* s) {
  s->EndPoll();
  RoundDone();
}

void HealthPoller::SendReady(Site* s, bool follow_up) {
  const Clock& clock = table_.clock();
  const int64_t sent = clock.NowNs();
  http::ClientCallbacks ready;
  ready.on_done = [this, s, sent, follow_up, &clock](absl::Status status, http::ClientResponse response) {
    const int64_t now = clock.NowNs();
    const bool fresh = !response.reused_connection;
    if (!status.ok()) {
      s->PollFailed(now, StrCat("/ready: ", status.message()));
    } else if (response.status == 200) {
      s->PollReady(now, now - sent, fresh);
    } else if (response.status == 503) {
      s->PollDraining(now, now - sent, fresh);
    } else {
      s->PollFailed(now, StrCat("/ready answered ", response.status));
    }
    if (!status.ok() || (response.status != 200 && response.status != 503)) return EndPoll(s);
    // A poll that opened its connection timed the connect too (and a cold
    // path behind it): ask again at once on the kept connection, so the
    // RTT the choice uses is the link's from the first round on.
    if (fresh && !follow_up) return SendReady(s, /*follow_up=*/true);
    if (response.status != 200) return EndPoll(s);
    http::ClientCallbacks load;
    load.on_done = [this, s](absl::Status st, http::ClientResponse r) {
      // A site without /load (not a swiftlet) just publishes no wait.
      if (st.ok() && r.status == 200) {
        if (auto parsed = ParseLoad(r.body); parsed.ok()) s->SetPublishedWait(parsed->wait_ms, parsed->draining);
      }
      EndPoll(s);
    };
    if (!s->SendPoll(Get("/load"), std::move(load))) EndPoll(s);
  };
  if (!s->SendPoll(Get("/ready"), std::move(ready))) EndPoll(s);
}

}  // namespace swiftlet::gateway
