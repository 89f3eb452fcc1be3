#include "gateway/proxy_call.h"

#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/str_cat.h"
#include "gateway/forwarding.h"
#include "http/client.h"

namespace swiftlet::gateway {
namespace {

bool Retryable(int status) { return status == 429 || (status >= 500 && status <= 599); }

class ProxyCall : public std::enable_shared_from_this<ProxyCall> {
 public:
  ProxyCall(GatewayContext& ctx, http::HttpRequest request, std::shared_ptr<http::ResponseWriter> writer)
      : ctx_(ctx), received_ns_(request.received_ns > 0 ? request.received_ns : ctx.clock.NowNs()),
        writer_(std::move(writer)) {
    ctx_.in_flight.fetch_add(1, std::memory_order_acq_rel);
    upstream_.method = request.method;
    upstream_.target = request.target;
    upstream_.headers = UpstreamRequestHeaders(request);
    if (request.method == "POST") stream_id_ = StreamIdFromBody(request.body);
    upstream_.body = std::move(request.body);
  }

  ~ProxyCall() { ctx_.in_flight.fetch_sub(1, std::memory_order_acq_rel); }

  void Start() {
    std::weak_ptr<ProxyCall> weak = weak_from_this();
    writer_->OnClose([weak] {
      if (auto self = weak.lock()) self->OnClientGone();
    });
    std::lock_guard<std::mutex> lock(mu_);
    Attempt();
  }

 private:
  // A site answer that asked for failover, kept in case no site is left.
  struct Refusal {
    int status = 0;
    http::Headers headers;
    std::string body;
    std::string site;
  };

  void Attempt() {
    if (client_gone_ || done_) return;
    if (ctx_.stopping.load(std::memory_order_acquire)) return FinishOwn(503, "the gateway is shutting down", "");
    std::vector<const Site*> exclude;
    for (const auto& s : tried_) exclude.push_back(s.get());
    std::optional<std::string> pinned;
    if (stream_id_ && tried_.empty()) pinned = ctx_.affinity.Find(*stream_id_, ctx_.clock.NowNs());
    SiteTable::Choice choice = ctx_.table.Choose(exclude, pinned);
    if (choice.site == nullptr) return NoSiteLeft();
    if (!tried_.empty() && pending_failover_) {
      tried_.back()->counters().failovers[static_cast<size_t>(*pending_failover_)].fetch_add(1);
    }
    pending_failover_.reset();
    site_ = choice.site;
    tried_.push_back(site_);
    ++attempt_;
    ++round_attempts_;
    status_ = 0;
    headers_ = http::Headers();
    attempt_start_ns_ = ctx_.clock.NowNs();

    http::ClientCallbacks cb;
    auto self = shared_from_this();
    const uint32_t attempt = attempt_;
    cb.on_headers = [self, attempt](int status, const http::Headers& headers) {
      self->OnHeaders(attempt, status, headers);
    };
    cb.on_event = [self, attempt](std::string_view data) { self->OnEvent(attempt, data); };
    cb.on_done = [self, attempt](absl::Status status, http::ClientResponse response) {
      self->OnDone(attempt, std::move(status), std::move(response));
    };
    std::optional<uint64_t> id = site_->Send(upstream_, std::move(cb));
    if (!id.has_value()) {
      site_->EndRequestAbandoned();
      return FinishOwn(503, "the gateway is shutting down", "");
    }
    upstream_id_ = *id;
    upstream_active_ = true;
  }

  void OnHeaders(uint32_t attempt, int status, const http::Headers& headers) {
    std::lock_guard<std::mutex> lock(mu_);
    if (attempt != attempt_ || done_) return;
    status_ = status;
    headers_ = headers;
  }

  void OnEvent(uint32_t attempt, std::string_view data) {
    std::lock_guard<std::mutex> lock(mu_);
    if (attempt != attempt_ || done_ || client_gone_) return;
    if (!committed_) {
      Commit();
      if (!writer_->StartStream(status_, DownstreamResponseHeaders(headers_, site_->name()))) return ClientGone();
    }
    if (!writer_->WriteEvent(data) && writer_->cancelled()) ClientGone();
  }

  void OnDone(uint32_t attempt, absl::Status status, http::ClientResponse response) {
    std::lock_guard<std::mutex> lock(mu_);
    if (attempt != attempt_ || done_) return;
    upstream_active_ = false;
    const int64_t now = ctx_.clock.NowNs();
    if (client_gone_) {
      site_->EndRequestAbandoned();
      done_ = true;
      return;
    }
    if (status.ok()) {
      if (committed_) {
        SlotFreed(now);
        writer_->End();
        return Finished(ClassOf(status_));
      }
      const int code = response.status;
      if (Retryable(code)) {
        if (code == 429) {
          // Alive but full: not a breaker failure; benched for its Retry-After.
          site_->EndRequestOk(now);
          site_->RetryAfter(now, RetryAfterNs(response.headers).value_or(1'000'000'000));
          pending_failover_ = FailoverReason::k429;
        } else {
          site_->EndRequestFailed(now, StrCat("answered ", code));
          pending_failover_ = FailoverReason::k5xx;
        }
        refusal_ = Refusal{code, std::move(response.headers), std::move(response.body), site_->name()};
        return Next();
      }
      SlotFreed(now);
      Commit();
      writer_->Respond(code, DownstreamResponseHeaders(response.headers, site_->name()), std::move(response.body));
      return Finished(ClassOf(code));
    }
    site_->EndRequestFailed(now, std::string(status.message()));
    if (committed_) {
      // Bytes are out: the only honest end is an error event the client's
      // SDK raises, then the end of the stream.
      site_->counters().stream_errors.fetch_add(1, std::memory_order_relaxed);
      writer_->WriteEvent(StreamErrorEventData(
          StrCat("the stream from site ", site_->name(), " broke: ", status.message())));
      writer_->End();
      return Finished(ResponseClass::kError);
    }
    if (status.code() == absl::StatusCode::kUnavailable || status.code() == absl::StatusCode::kDeadlineExceeded) {
      pending_failover_ = FailoverReason::kConnect;
      last_error_ = StrCat("site ", site_->name(), ": ", status.message());
      return Next();
    }
    // A malformed or oversized answer: the site's fault, but trying it
    // elsewhere would not make it smaller.
    FinishOwn(502, StrCat("site ", site_->name(), " sent an answer the gateway cannot pass on: ", status.message()),
              "bad_upstream_response");
  }

  // A request finished at site_: its slot is free, so the site's bench (if
  // a 429 set one) ends, and a request held for a bench may try now rather
  // than at the bench's estimated end.
  void SlotFreed(int64_t now) {
    site_->EndRequestOk(now, /*freed_slot=*/true);
    ctx_.delayed.RunEarliestNow();
  }

  void Next() {
    if (round_attempts_ < ctx_.options.max_attempts) return Attempt();
    NoSiteLeft();
  }

  void NoSiteLeft() {
    if (Hold()) return;
    if (refusal_.has_value()) {
      Refusal r = *std::move(refusal_);
      refusal_.reset();
      writer_->Respond(r.status, DownstreamResponseHeaders(r.headers, r.site), std::move(r.body));
      done_ = true;
      if (!tried_.empty()) tried_.back()->counters().responses[static_cast<size_t>(ClassOf(r.status))].fetch_add(1);
      return;
    }
    if (tried_.empty()) {
      ctx_.counters.no_site.fetch_add(1, std::memory_order_relaxed);
      return FinishOwn(503, "no site can take a request now: every site is down, draining or busy", "no_site_available");
    }
    FinishOwn(502, StrCat("no site answered: ", last_error_), "upstream_unavailable");
  }

  // Every site that could take the request is benched by a Retry-After:
  // wait for the first bench to end, then start a new round over all
  // sites, while the request's time in the gateway stays within max_hold.
  // A client holding Retry-After would wait the same; the gateway saves it
  // the round trip and keeps it from hammering.
  bool Hold() {
    const int64_t max_hold = ctx_.options.max_hold.count() * 1'000'000;
    if (max_hold <= 0 || client_gone_ || ctx_.stopping.load(std::memory_order_acquire)) return false;
    const std::optional<int64_t> until = ctx_.table.SoonestBenchEnd();
    if (!until.has_value() || *until - received_ns_ > max_hold) return false;
    ctx_.counters.held.fetch_add(1, std::memory_order_relaxed);
    if (!tried_.empty() && pending_failover_) {
      tried_.back()->counters().failovers[static_cast<size_t>(*pending_failover_)].fetch_add(1);
      pending_failover_.reset();
    }
    tried_.clear();
    round_attempts_ = 0;
    auto self = shared_from_this();
    ctx_.delayed.Post(*until, [self] {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->Attempt();
    });
    return true;
  }

  // The answer is being sent from site_ now: record what the gateway added
  // (everything before the answering attempt went out) and pin the stream.
  void Commit() {
    committed_ = true;
    site_->counters().added_latency.Record(attempt_start_ns_ - received_ns_);
    if (stream_id_) ctx_.affinity.Pin(*stream_id_, site_->name(), ctx_.clock.NowNs());
  }

  void Finished(ResponseClass c) {
    done_ = true;
    site_->counters().responses[static_cast<size_t>(c)].fetch_add(1, std::memory_order_relaxed);
  }

  void FinishOwn(int status, std::string_view message, std::string_view code) {
    done_ = true;
    ctx_.counters.own_responses[static_cast<size_t>(ClassOf(status))].fetch_add(1, std::memory_order_relaxed);
    http::Headers headers{{"Content-Type", "application/json"}};
    if (status == 503) headers.Add("Retry-After", "1");
    writer_->Respond(status, std::move(headers), ErrorJson(status, message, code));
  }

  void OnClientGone() {
    std::lock_guard<std::mutex> lock(mu_);
    ClientGone();
  }

  void ClientGone() {
    if (client_gone_) return;
    client_gone_ = true;
    ctx_.counters.client_gone.fetch_add(1, std::memory_order_relaxed);
    // Its on_done (Cancelled) follows and ends the attempt.
    if (upstream_active_ && site_ != nullptr) site_->Cancel(upstream_id_);
  }

  GatewayContext& ctx_;
  const int64_t received_ns_;
  const std::shared_ptr<http::ResponseWriter> writer_;
  http::ClientRequest upstream_;
  std::optional<std::string> stream_id_;

  std::mutex mu_;
  uint32_t attempt_ = 0;     // All attempts: tells a stale callback from the current one.
  int round_attempts_ = 0;   // Attempts since the last hold.
  std::shared_ptr<Site> site_;
  std::vector<std::shared_ptr<Site>> tried_;
  uint64_t upstream_id_ = 0;
  bool upstream_active_ = false;
  int64_t attempt_start_ns_ = 0;
  int status_ = 0;
  http::Headers headers_;
  bool committed_ = false;
  bool done_ = false;
  bool client_gone_ = false;
  std::optional<FailoverReason> pending_failover_;
  std::optional<Refusal> refusal_;
  std::string last_error_;
};

}  // namespace

void StartProxyCall(GatewayContext& context, http::HttpRequest request,
                    std::shared_ptr<http::ResponseWriter> writer) {
  context.counters.requests.fetch_add(1, std::memory_order_relaxed);
  if (context.in_flight.load(std::memory_order_acquire) >= static_cast<int64_t>(context.options.max_in_flight)) {
    context.counters.overloaded.fetch_add(1, std::memory_order_relaxed);
    context.counters.own_responses[static_cast<size_t>(ResponseClass::k5xx)].fetch_add(1);
    writer->Respond(503, {{"Content-Type", "application/json"}, {"Retry-After", "1"}},
                    ErrorJson(503, "the gateway has too many requests in flight", "gateway_overloaded"));
    return;
  }
  auto call = std::make_shared<ProxyCall>(context, std::move(request), std::move(writer));
  call->Start();
}

}  // namespace swiftlet::gateway
