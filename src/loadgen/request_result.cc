#include "loadgen/request_result.h"

#include <charconv>

#include "api/errors.h"
#include "api/response_codec.h"
#include "core/str_cat.h"

namespace swiftlet::loadgen {
namespace {

// A whole non-negative number, or -1.
int64_t ParseNonNegative(std::string_view s) {
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && v >= 0 ? v : -1;
}

int64_t RetryAfterMs(const http::Headers& headers) {
  if (auto ms = headers.Get("retry-after-ms"); ms) {
    if (const int64_t v = ParseNonNegative(*ms); v >= 0) return v;
  }
  if (auto s = headers.Get("retry-after"); s) {
    if (const int64_t v = ParseNonNegative(*s); v >= 0 && v < (int64_t{1} << 40)) return v * 1000;
  }
  return -1;
}

std::string TransportKind(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kDeadlineExceeded: return "timeout";
    case absl::StatusCode::kCancelled: return "cancelled";
    case absl::StatusCode::kUnavailable: return "connection";
    case absl::StatusCode::kResourceExhausted: return "response_too_large";
    case absl::StatusCode::kInvalidArgument: return "malformed_response";
    default: return "client_error";
  }
}

}  // namespace

RequestRecorder::RequestRecorder(const Clock& clock, int64_t index, int64_t arrival_ns,
                                 bool warmup, int32_t asked_output_tokens)
    : clock_(clock) {
  result_.index = index;
  result_.timeline.arrival_ns = arrival_ns;
  result_.timeline.warmup = warmup;
  result_.asked_output_tokens = asked_output_tokens;
}

void RequestRecorder::OnSent() { result_.sent_ns = clock_.NowNs(); }

void RequestRecorder::OnHeaders(int status, const http::Headers& headers) {
  headers_ns_ = clock_.NowNs();
  result_.http_status = status;
  if (status == 429) result_.retry_after_ms = RetryAfterMs(headers);
}

void RequestRecorder::OnEvent(std::string_view data) {
  if (done_ || result_.http_status != 200) return;
  const int64_t now = clock_.NowNs();
  if (data == api::kStreamDone) {
    saw_done_marker_ = true;
    return;
  }
  auto chunk = api::ParseCompletionResponse(data);
  if (!chunk.ok()) {
    malformed_ = true;
    return;
  }
  if (chunk->usage) {
    result_.prompt_tokens = chunk->usage->prompt_tokens;
    result_.cached_prompt_tokens = chunk->usage->cached_tokens;
    result_.completion_tokens = chunk->usage->completion_tokens;
  }
  for (const api::Choice& c : chunk->choices) {
    if (c.index != 0) continue;
    if (c.text && !c.text->empty()) {
      RequestTimeline& t = result_.timeline;
      if (t.first_token_ns < 0) t.first_token_ns = now;
      t.token_times_ns.push_back(now);
      counted_tokens_ += c.logprobs && !c.logprobs->empty()
                             ? static_cast<int64_t>(c.logprobs->size())
                             : 1;
      result_.chunks += 1;
    }
    if (!c.finish_reason.empty()) result_.finish_reason = c.finish_reason;
  }
}

void RequestRecorder::Fail(std::string kind) {
  result_.kind = std::move(kind);
  result_.timeline.outcome = RequestOutcome::kFailed;
}

void RequestRecorder::OnDone(const absl::Status& status, const http::ClientResponse& response) {
  if (done_) return;
  done_ = true;
  const int64_t now = clock_.NowNs();
  RequestTimeline& t = result_.timeline;
  if (!status.ok()) return Fail(TransportKind(status));
  result_.http_status = response.status;
  if (response.status == 429) {
    t.outcome = RequestOutcome::kRefused;
    t.refused_after_ns = (headers_ns_ >= 0 ? headers_ns_ : now) - t.arrival_ns;
    result_.kind = "refused";
    if (auto error = api::ParseErrorResponse(response.body); error.ok() && !error->code.empty()) {
      result_.kind = StrCat("refused:", error->code);
    }
    if (result_.retry_after_ms < 0) result_.retry_after_ms = RetryAfterMs(response.headers);
    return;
  }
  if (response.status != 200) return Fail(StrCat("http_", response.status));
  if (malformed_) return Fail("malformed_chunk");
  if (!saw_done_marker_ || result_.finish_reason.empty()) return Fail("truncated_stream");
  t.finish_ns = now;
  t.output_tokens = result_.completion_tokens >= 0 ? result_.completion_tokens : counted_tokens_;
  t.outcome = RequestOutcome::kFinished;
}

}  // namespace swiftlet::loadgen
