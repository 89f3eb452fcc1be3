#include "server/embedding_call.h"

#include <algorithm>
#include <utility>

#include "server/engine_call.h"
#include "server/error_response.h"

namespace swiftlet::server {

class EmbeddingCall::Sink final : public RequestSink {
 public:
  Sink(std::shared_ptr<EmbeddingCall> call, size_t index) : call_(std::move(call)), index_(index) {}
  void OnTokens(const TokenEvent& /*event*/) override {}
  void OnEmbedding(const std::vector<float>& embedding) override { call_->OnEmbedding(index_, embedding); }
  void OnFinish(int32_t /*choice*/, FinishReason reason, const std::string& message) override {
    call_->OnFinish(reason, message);
  }
  void OnComplete(const Usage& usage, const Timings& timings) override { call_->OnComplete(usage, timings); }

 private:
  const std::shared_ptr<EmbeddingCall> call_;
  const size_t index_;
};

std::shared_ptr<EmbeddingCall> EmbeddingCall::Create(EmbeddingCallSpec spec,
                                                     std::shared_ptr<http::ResponseWriter> writer,
                                                     RequestQueue& queue, Done done) {
  return std::shared_ptr<EmbeddingCall>(new EmbeddingCall(std::move(spec), std::move(writer), queue, std::move(done)));
}

EmbeddingCall::EmbeddingCall(EmbeddingCallSpec spec, std::shared_ptr<http::ResponseWriter> writer,
                             RequestQueue& queue, Done done)
    : spec_(std::move(spec)),
      writer_(std::move(writer)),
      queue_(queue),
      done_(std::move(done)),
      embeddings_(spec_.inputs) {}

std::shared_ptr<RequestSink> EmbeddingCall::SinkFor(size_t index) {
  return std::make_shared<Sink>(shared_from_this(), index);
}

void EmbeddingCall::OnEmbedding(size_t index, const std::vector<float>& embedding) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_ || index >= embeddings_.size()) return;
  embeddings_[index] = embedding;
}

void EmbeddingCall::OnFinish(FinishReason reason, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (reason == FinishReason::kError && error_.empty()) error_ = message.empty() ? "engine error" : message;
  if (reason == FinishReason::kCancelled) cancelled_ = true;
}

void EmbeddingCall::OnComplete(const Usage& usage, const Timings& timings) {
  std::lock_guard<std::mutex> lock(mu_);
  summary_.usage.prompt_tokens += usage.prompt_tokens;
  Timings& t = summary_.timings;
  t.received_ns = timings.received_ns;
  t.queued_ns = std::max(t.queued_ns, timings.queued_ns);
  t.prefill_ns = std::max(t.prefill_ns, timings.prefill_ns);
  t.ttft_ns = std::max(t.ttft_ns, timings.ttft_ns);
  t.ttft_estimate_ns = std::max(t.ttft_estimate_ns, timings.ttft_estimate_ns);
  t.e2e_ns = std::max(t.e2e_ns, timings.e2e_ns);
  ++completed_;
  FinishIfDone();
}

void EmbeddingCall::Start(std::vector<uint64_t> engine_ids) {
  CancelOnClientClose(*writer_, shared_from_this(), std::move(engine_ids));
  std::lock_guard<std::mutex> lock(mu_);
  started_ = true;
  FinishIfDone();
}

void EmbeddingCall::Abort(std::vector<uint64_t> accepted, const absl::Status& status, http::Headers headers) {
  for (uint64_t id : accepted) queue_.Cancel(id);
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  ReportError(status, std::move(headers));
}

void EmbeddingCall::FinishIfDone() {
  if (!started_ || ended_ || completed_ < spec_.inputs) return;
  if (writer_->cancelled()) return Report(499, [] {});
  if (!error_.empty()) return ReportError(absl::InternalError(error_), {});
  if (cancelled_) {
    return ReportError(absl::UnavailableError("the server is shutting down; the request was cancelled"), {});
  }
  api::EmbeddingResponse response;
  response.model = spec_.model;
  response.embeddings = std::move(embeddings_);
  response.encoding = spec_.encoding;
  response.prompt_tokens = summary_.usage.prompt_tokens;
  Report(200, [&]() {
    RespondJson(*writer_, 200, api::SerializeEmbeddingResponse(response));
  });
}

void EmbeddingCall::ReportError(const absl::Status& status, http::Headers headers) {
  Report(ErrorHttpStatus(status),
         [&]() { RespondError(*writer_, status, std::move(headers)); });
}

void EmbeddingCall::Report(int http_status, const std::function<void()>& respond) {
  ended_ = true;
  summary_.http_status = http_status;
  if (done_) done_(summary_);
  respond();
}

}  // namespace swiftlet::server
