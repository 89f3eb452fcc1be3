#include "gateway/websocket_relay.h"

#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/str_cat.h"
#include "gateway/forwarding.h"
#include "gateway/site_choice.h"
#include "http/websocket.h"
#include "http/websocket_client.h"

namespace swiftlet::gateway {
namespace {

namespace close_code = http::websocket_close;
constexpr int kServiceRestart = 1012;  // RFC 6455 registry: reconnect, the service moved.

class Relay final : public WebSocketRelay, public std::enable_shared_from_this<Relay> {
 public:
  Relay(GatewayContext& ctx, http::HttpRequest request, std::shared_ptr<http::ResponseWriter> writer)
      : ctx_(ctx),
        target_(request.target),
        headers_(UpstreamUpgradeHeaders(request)),
        stream_id_(StreamIdFromQuery(request.query)),
        writer_(std::move(writer)) {
    ctx_.websockets_open.fetch_add(1, std::memory_order_acq_rel);
  }

  ~Relay() override { ctx_.websockets_open.fetch_sub(1, std::memory_order_acq_rel); }

  void Start() {
    std::weak_ptr<Relay> weak = weak_from_this();
    // Runs only while the upgrade is pending (AcceptWebSocket ends the
    // writer's callbacks): the client left during the site's handshake.
    writer_->OnClose([weak] {
      if (auto self = weak.lock()) self->OnClientLeftEarly();
    });
    std::lock_guard<std::mutex> lock(mu_);
    Attempt();
  }

  void CheckSite(std::optional<double> best_ms) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (downstream_ == nullptr || closing_ || site_ == nullptr) return;
    const int64_t now = ctx_.clock.NowNs();
    double score = 0;
    const bool current = ctx_.table.Find(site_->name()) == site_;
    const bool healthy = current && site_->Healthy(now, &score);
    if (healthy && (!best_ms.has_value() || KeepsAffinity(score, *best_ms))) return;
    site_->counters().websockets_moved.fetch_add(1, std::memory_order_relaxed);
    CloseBoth(kServiceRestart,
              healthy ? "a much faster site is available: reconnect" : "the site is unavailable: reconnect");
  }

 private:
  void Attempt() {
    if (client_gone_) return;
    if (ctx_.stopping.load(std::memory_order_acquire)) return Refuse(503, "the gateway is shutting down", "");
    std::vector<const Site*> exclude;
    for (const auto& s : tried_) exclude.push_back(s.get());
    std::optional<std::string> pinned;
    if (stream_id_ && tried_.empty()) pinned = ctx_.affinity.Find(*stream_id_, ctx_.clock.NowNs());
    SiteTable::Choice choice = ctx_.table.Choose(exclude, pinned);
    if (choice.site == nullptr) {
      if (tried_.empty()) ctx_.counters.no_site.fetch_add(1, std::memory_order_relaxed);
      return Refuse(tried_.empty() ? 503 : 502,
                    tried_.empty() ? "no site can take a stream now: every site is down, draining or busy"
                                   : StrCat("no site accepted the stream: ", last_error_),
                    tried_.empty() ? "no_site_available" : "upstream_unavailable");
    }
    if (!tried_.empty() && pending_failover_) {
      tried_.back()->counters().failovers[static_cast<size_t>(*pending_failover_)].fetch_add(1);
    }
    site_ = choice.site;
    tried_.push_back(site_);
    ++attempt_;
    attempt_ended_ = false;
    auto self = shared_from_this();
    const uint32_t attempt = attempt_;
    http::WebSocketClientHandlers h;
    h.on_open = [self, attempt](const http::Headers&) { self->OnSiteOpen(attempt); };
    h.on_message = [self](std::string text) { self->OnSiteMessage(std::move(text)); };
    h.on_close = [self, attempt](const http::WebSocketClientClose& close) { self->OnSiteClose(attempt, close); };
    upstream_ = site_->ConnectWebSocket(target_, headers_, std::move(h));
    if (upstream_ == nullptr) {
      EndAttempt(Verdict::kAbandoned);
      return Refuse(503, "the gateway is shutting down", "");
    }
  }

  void OnSiteOpen(uint32_t attempt) {
    std::lock_guard<std::mutex> lock(mu_);
    if (attempt != attempt_) return;
    EndAttempt(Verdict::kOk);
    site_->counters().websockets.fetch_add(1, std::memory_order_relaxed);
    if (client_gone_) {
      upstream_->Close(close_code::kGoingAway, "the client left");
      return;
    }
    http::WebSocketOptions o;
    o.max_message_bytes = ctx_.options.websocket_max_message_bytes;
    http::WebSocketHandlers h;
    std::weak_ptr<Relay> weak = weak_from_this();
    h.on_message = [weak](std::string text) {
      if (auto self = weak.lock()) self->OnClientMessage(std::move(text));
    };
    // The client side holds the relay until it ends (the server releases
    // handlers after on_close), so the relay lives as long as the stream.
    h.on_close = [self = shared_from_this()](int code, std::string reason) {
      self->OnClientClose(code, std::move(reason));
    };
    downstream_ = writer_->AcceptWebSocket(o, std::move(h));
    if (downstream_ == nullptr) {
      upstream_->Close(close_code::kGoingAway, "the client left");
      client_gone_ = true;
      return;
    }
    opened_ = true;
    if (stream_id_) ctx_.affinity.Pin(*stream_id_, site_->name(), ctx_.clock.NowNs());
    std::lock_guard<std::mutex> relays(ctx_.relays_mu);
    ctx_.relays.push_back(weak_from_this());
  }

  void OnSiteMessage(std::string text) {
    std::shared_ptr<http::WebSocket> down;
    {
      std::lock_guard<std::mutex> lock(mu_);
      down = downstream_;
    }
    // No backpressure to give the site: past the client's hard send limit
    // the client connection closes (1008), which closes the site's side.
    if (down != nullptr) down->SendText(std::move(text));
  }

  void OnClientMessage(std::string text) {
    std::shared_ptr<http::WebSocket> up;
    {
      std::lock_guard<std::mutex> lock(mu_);
      up = upstream_;
    }
    if (up != nullptr) up->SendText(std::move(text));
  }

  void OnSiteClose(uint32_t attempt, const http::WebSocketClientClose& close) {
    std::lock_guard<std::mutex> lock(mu_);
    if (attempt != attempt_) return;
    if (!opened_) {
      const int64_t now = ctx_.clock.NowNs();
      if (client_gone_) return EndAttempt(Verdict::kAbandoned);
      const int code = close.http_status;
      if (code == 0 || Retryable(code)) {
        if (code == 429) {
          EndAttempt(Verdict::kOk);
          // The refused upgrade's headers are not reported; a second is the
          // default bench, as for a 429 without Retry-After.
          site_->RetryAfter(now, 1'000'000'000);
          pending_failover_ = FailoverReason::k429;
        } else {
          EndAttempt(Verdict::kFailed, std::string(close.status.message()));
          pending_failover_ = code == 0 ? FailoverReason::kConnect : FailoverReason::k5xx;
        }
        last_error_ = StrCat("site ", site_->name(), ": ",
                             code == 0 ? std::string(close.status.message()) : StrCat("answered ", code));
        refusal_status_ = code;
        refusal_body_ = close.http_body;
        refusal_site_ = site_->name();
        if (attempt_ < static_cast<uint32_t>(ctx_.options.max_attempts)) return Attempt();
        return RefuseWithLast();
      }
      // The site refused the stream for a reason of the request's own
      // (400 bad languages, 403 origin, 426): the client gets that answer.
      EndAttempt(Verdict::kOk);
      return Respond(code, close.http_body, site_->name());
    }
    if (closing_) return;
    closing_ = true;
    if (downstream_ != nullptr) {
      // A site that vanished (1006, no close frame) tells the client to come
      // back: its reconnect lands on a site that is up.
      const bool lost = close.code == close_code::kAbnormal || close.code == close_code::kNoStatus;
      const int code = lost ? kServiceRestart
                            : (http::IsSendableCloseCode(close.code) ? close.code : close_code::kInternalError);
      downstream_->Close(code, lost ? "the site went away: reconnect" : close.reason);
    }
  }

  void OnClientClose(int code, std::string reason) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    closing_ = true;
    if (upstream_ != nullptr) {
      upstream_->Close(http::IsSendableCloseCode(code) ? code : close_code::kGoingAway, std::move(reason));
    }
  }

  void OnClientLeftEarly() {
    std::lock_guard<std::mutex> lock(mu_);
    client_gone_ = true;
    ctx_.counters.client_gone.fetch_add(1, std::memory_order_relaxed);
    if (upstream_ != nullptr) upstream_->Close(close_code::kGoingAway, "the client left");
  }

  void CloseBoth(int code, std::string reason) {
    closing_ = true;
    if (downstream_ != nullptr) downstream_->Close(code, reason);
    if (upstream_ != nullptr) upstream_->Close(close_code::kGoingAway, "the stream moved");
  }

  enum class Verdict { kOk, kFailed, kAbandoned };
  // Ends the attempt's count at its site once, whichever callback sees the
  // end first (an open that the client already left is also closed later).
  void EndAttempt(Verdict verdict, std::string error = "") {
    if (attempt_ended_) return;
    attempt_ended_ = true;
    const int64_t now = ctx_.clock.NowNs();
    switch (verdict) {
      case Verdict::kOk: return site_->EndRequestOk(now);
      case Verdict::kFailed: return site_->EndRequestFailed(now, std::move(error));
      case Verdict::kAbandoned: return site_->EndRequestAbandoned();
    }
  }

  static bool Retryable(int status) { return status == 429 || (status >= 500 && status <= 599); }

  void RefuseWithLast() {
    if (refusal_status_ > 0) return Respond(refusal_status_, refusal_body_, refusal_site_);
    Refuse(502, StrCat("no site accepted the stream: ", last_error_), "upstream_unavailable");
  }

  void Respond(int status, std::string body, const std::string& site) {
    http::Headers h{{"Content-Type", "application/json"}};
    h.Add(std::string(kSiteHeader), site);
    writer_->Respond(status, std::move(h), std::move(body));
  }

  void Refuse(int status, std::string_view message, std::string_view code) {
    ctx_.counters.own_responses[static_cast<size_t>(ClassOf(status))].fetch_add(1, std::memory_order_relaxed);
    http::Headers h{{"Content-Type", "application/json"}};
    if (status == 503) h.Add("Retry-After", "1");
    writer_->Respond(status, std::move(h), ErrorJson(status, message, code));
  }

  GatewayContext& ctx_;
  const std::string target_;
  const http::Headers headers_;
  const std::optional<std::string> stream_id_;
  const std::shared_ptr<http::ResponseWriter> writer_;

  std::mutex mu_;
  uint32_t attempt_ = 0;
  std::shared_ptr<Site> site_;
  std::vector<std::shared_ptr<Site>> tried_;
  std::shared_ptr<http::WebSocket> upstream_;
  std::shared_ptr<http::WebSocket> downstream_;
  bool attempt_ended_ = true;
  bool opened_ = false;
  bool closing_ = false;
  bool client_gone_ = false;
  std::optional<FailoverReason> pending_failover_;
  std::string last_error_;
  int refusal_status_ = 0;
  std::string refusal_body_;
  std::string refusal_site_;
};

}  // namespace

void StartWebSocketRelay(GatewayContext& context, http::HttpRequest request,
                         std::shared_ptr<http::ResponseWriter> writer) {
  context.counters.requests.fetch_add(1, std::memory_order_relaxed);
  if (context.websockets_open.load(std::memory_order_acquire) >=
      static_cast<int64_t>(context.options.max_websockets)) {
    context.counters.overloaded.fetch_add(1, std::memory_order_relaxed);
    context.counters.own_responses[static_cast<size_t>(ResponseClass::k5xx)].fetch_add(1);
    writer->Respond(503, {{"Content-Type", "application/json"}, {"Retry-After", "1"}},
                    ErrorJson(503, "the gateway relays too many streams", "gateway_overloaded"));
    return;
  }
  auto relay = std::make_shared<Relay>(context, std::move(request), std::move(writer));
  relay->Start();
}

}  // namespace swiftlet::gateway
