// What a client asks of the engine and what it hears back.
//
// A Request carries prompt tokens and options; the engine answers through
// the request's RequestSink, on the engine thread, in this order per
// choice: OnTokens (the first call has first_token set) ... OnFinish; then
// one OnComplete for the whole request. A refused request gets no events:
// Engine::Submit returns the refusal synchronously, before anything is
// sent to the client (the server answers 429/503 from it).
//
// Definitions (DESIGN.md): TTFT = first token emitted - request received;
// TPOT = (last token - first token) / (output tokens - 1); ITL = gap
// between consecutive token events.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/pooling.h"
#include "engine/sampling.h"

namespace swiftlet {

// Classes of service. Embedding requests are their own class: they run
// through the same batches and admission as generation, with their own
// targets (their "first token" is the embedding).
enum class LatencyClass { kInteractive, kBatch, kEmbedding };
const char* LatencyClassName(LatencyClass c);
// Scheduling and preemption order, lower first: interactive, embedding
// (a query waits on it), batch.
int LatencyClassRank(LatencyClass c);

// Latency targets in nanoseconds; 0 means none.
struct LatencyTargets {
  int64_t ttft_ns = 0;
  int64_t tpot_ns = 0;
};

struct RequestOptions {
  SamplingParams sampling;
  int32_t max_tokens = 256;             // Output tokens per choice, >= 1.
  std::vector<std::string> stop;        // Never emitted; matched across tokens.
  std::vector<int32_t> stop_token_ids;  // Finish (not emitted) on these ids.
  bool ignore_eos = false;              // Keep going past end-of-generation ids.
  // End-of-generation and stop token ids cannot be sampled before this many
  // output tokens (stop strings still apply). <= max_tokens.
  int32_t min_tokens = 0;
  int32_t n = 1;                        // Choices; seeds seed, seed+1, ...
  int32_t top_logprobs = -1;            // -1: no logprobs; k >= 0: chosen + k alternatives.
  LatencyClass latency_class = LatencyClass::kInteractive;
  // Tightens the class's defaults (a looser value is ignored).
  LatencyTargets targets;
  // An embedding request: the prompt is run, its final hidden states are
  // pooled and sent through RequestSink::OnEmbedding; nothing is sampled
  // (max_tokens, n and sampling are ignored; latency_class is kEmbedding).
  bool embedding = false;
  Pooling pooling = Pooling::kMean;
};

enum class FinishReason { kStop, kLength, kCancelled, kRefused, kError };
const char* FinishReasonName(FinishReason r);

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
};

// One step's output for one choice: usually one token, possibly with no
// text (an incomplete UTF-8 character, or text held back while it might be
// the start of a stop string), possibly text released for earlier tokens.
struct TokenEvent {
  int32_t choice = 0;
  bool first_token = false;
  std::vector<int32_t> ids;
  std::string text;
  // With logprobs: per id, the chosen token and the top alternatives.
  std::vector<TokenLogprob> chosen;
  std::vector<std::vector<TokenLogprob>> top;
  int64_t time_ns = 0;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  // All choices.
  int64_t cached_prompt_tokens = 0;
};

struct Timings {
  int64_t received_ns = 0;
  int64_t queued_ns = 0;    // Received until its first prefill chunk ran.
  int64_t prefill_ns = 0;   // First prefill chunk until the prompt was done.
  int64_t ttft_ns = 0;      // Received until the first token event (-1: none).
  int64_t ttft_estimate_ns = -1;  // What admission predicted for it (-1: none).
  int64_t tpot_ns = 0;      // Mean time per output token after the first (choice 0).
  int64_t e2e_ns = 0;       // Received until finished.
};

// Receives a request's events. Called on the engine thread, so an
// implementation must be quick and must not call back into the engine
// except Cancel (a server posts the event to the connection's strand).
class RequestSink {
 public:
  virtual ~RequestSink() = default;
  virtual void OnTokens(const TokenEvent& event) = 0;
  virtual void OnFinish(int32_t choice, FinishReason reason, const std::string& message) = 0;
  // An embedding request's result (L2-normalised), before its OnFinish.
  virtual void OnEmbedding(const std::vector<float>& /*embedding*/) {}
  virtual void OnComplete(const Usage& usage, const Timings& timings) = 0;
};

struct Request {
  std::vector<int32_t> prompt;  // Token ids, non-empty.
  // A request group (one comment into K languages): when not empty, the
  // prompt is the part the K prompts share and choice i's prompt is
  // prompt + branches[i] (each non-empty; options.n == branches.size()).
  // The shared part is computed once, then the K choices fork from its last
  // position and run their own tokens; the group is admitted or refused
  // whole. Usage counts the shared part once.
  std::vector<std::vector<int32_t>> branches;
  RequestOptions options;
  std::shared_ptr<RequestSink> sink;
  int64_t received_ns = 0;  // 0: the engine stamps it at Submit.
  // The prefix cache's scope (kv/paged_kv_cache.h CreateSequence): 0
  // global, else a tenant's own.
  uint64_t cache_scope = 0;
};

// Why a request was refused at Submit.
enum class RefusalReason {
  kNone,
  kInvalid,        // Bad request (400): message says which field.
  kQueueFull,      // --max-queue requests waiting.
  kQueuedTokens,   // --max-queued-tokens of prefill backlog.
  kKvMemory,       // Would not fit the KV cache even alone, or not now.
  kTtftTarget,     // Its TTFT target cannot be met with the work ahead.
  kNotReady,       // Engine not running or draining (503).
};
const char* RefusalReasonName(RefusalReason r);

struct SubmitResult {
  uint64_t id = 0;  // Valid when accepted.
  RefusalReason refused = RefusalReason::kNone;
  std::string message;
  int64_t retry_after_ms = 0;  // For load refusals: when to try again.
  bool accepted() const { return refused == RefusalReason::kNone; }
};

// What the engine offers its callers (the server, the load driver, tests).
// Thread-safe.
class RequestQueue {
 public:
  virtual ~RequestQueue() = default;
  virtual SubmitResult Submit(Request request) = 0;
  // Cancels an accepted request (finish reason kCancelled) at the next
  // step, whatever its phase; unknown or finished ids are ignored.
  virtual void Cancel(uint64_t id) = 0;
};

}  // namespace swiftlet
