// What the load generator learned about one request, and how it learns it
// from the client's callbacks (RequestRecorder): timestamps for the shared
// statistics (core/load_stats.h), the HTTP status, the server's token
// counts, and what went wrong if something did.
//
// Classification, in order:
//   transport failure   failed; kind "timeout", "connection", "cancelled",
//                       "response_too_large", "malformed_response"
//   429                 refused (counted, never retried); kind "refused"
//                       plus ":" and the error body's code when it has one;
//                       retry_after_ms from retry-after-ms, else
//                       Retry-After seconds
//   other non-200       failed; kind "http_<status>"
//   200, a chunk that is not an OpenAI chunk    failed; "malformed_chunk"
//   200, no [DONE] or no finish_reason          failed; "truncated_stream"
//   200 otherwise       finished; kind empty
// A token event is a chunk of choice 0 with non-empty text (completions) or
// delta content (chat). It carries as many tokens as its logprobs entries,
// or one without logprobs; the final usage's completion_tokens, when sent,
// is the request's output token count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "core/clock.h"
#include "loadgen/load_stats.h"
#include "http/client.h"
#include "http/message.h"

namespace swiftlet::loadgen {

struct RequestResult {
  int64_t index = 0;
  RequestTimeline timeline;
  int64_t sent_ns = -1;          // When the request was handed to the client.
  int http_status = 0;           // 0: no response header arrived.
  std::string kind;              // Empty when finished; see above.
  std::string finish_reason;     // Choice 0's, as sent.
  int64_t retry_after_ms = -1;   // Refusals that said.
  int32_t asked_output_tokens = 0;
  int64_t chunks = 0;            // Stream events that carried output.
  // From the server's usage; -1 when it sent none.
  int64_t prompt_tokens = -1;
  int64_t cached_prompt_tokens = -1;
  int64_t completion_tokens = -1;
};

// Not thread-safe: one per request, called in the client's callback order
// (all on its I/O thread). Times come from `clock`.
class RequestRecorder {
 public:
  RequestRecorder(const Clock& clock, int64_t index, int64_t arrival_ns, bool warmup,
                  int32_t asked_output_tokens);

  void OnSent();
  void OnHeaders(int status, const http::Headers& headers);
  void OnEvent(std::string_view data);
  void OnDone(const absl::Status& status, const http::ClientResponse& response);

  bool done() const { return done_; }
  const RequestResult& result() const { return result_; }

 private:
  void Fail(std::string kind);

  const Clock& clock_;
  RequestResult result_;
  int64_t headers_ns_ = -1;
  int64_t counted_tokens_ = 0;
  bool saw_done_marker_ = false;
  bool malformed_ = false;
  bool done_ = false;
};

}  // namespace swiftlet::loadgen
