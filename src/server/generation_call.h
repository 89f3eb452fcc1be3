// The bridge between one HTTP request for /v1/completions or
// /v1/chat/completions and the engine requests serving it (one per prompt;
// each with n choices). Engine events arrive on the engine thread and are
// turned into OpenAI JSON here: SSE chunks as they come for a stream, one
// response at the end otherwise.
//
// Life of a call: the handler creates it, Submits one engine request per
// prompt with SinkFor(i), then calls Start(ids) when every Submit was
// accepted, or Abort(status) when one was refused (the accepted ones are
// cancelled and the client gets the refusal: nothing was sent yet, so the
// status is still free). Events that arrive before Start are held. When
// the client goes away, every engine request is cancelled (the engine
// frees their blocks at its next step). `done` runs exactly once, when the
// response is finished or abandoned, with what the log and metrics need.
//
// Thread-safe: sinks are called on the engine thread, Start/Abort on an
// I/O thread, the writer's close callback on another; one mutex orders
// them. Nothing here blocks or calls back into the engine except Cancel.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "api/response_codec.h"
#include "core/status.h"
#include "engine/request.h"
#include "http/response_writer.h"
#include "server/openai_mapping.h"
#include "text/tokenizer.h"

namespace swiftlet::server {

struct GenerationCallSpec {
  GenerationEndpoint endpoint = GenerationEndpoint::kCompletions;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool logprobs = false;       // Engine requests carry logprobs.
  bool keep_text = false;      // Keep output text for the summary (--log-content).
  std::string id;              // "cmpl-..." / "chatcmpl-..."
  std::string model;
  int64_t created = 0;         // Unix seconds.
  int32_t n = 1;               // Choices per prompt.
  size_t prompts = 1;
};

// What the request log line and the request counter need.
struct GenerationSummary {
  int http_status = 200;  // 499: the client went away first.
  Usage usage;
  Timings timings;        // Of the slowest prompt; ttft of the fastest.
  std::string finish;     // Engine finish reason of the last choice to end.
  std::string output;     // With keep_text: every choice's text, in order.
};

class GenerationCall : public std::enable_shared_from_this<GenerationCall> {
 public:
  using Done = std::function<void(const GenerationSummary&)>;

  // The tokenizer names tokens in logprobs; it and `queue` must outlive
  // every engine request of this call.
  static std::shared_ptr<GenerationCall> Create(GenerationCallSpec spec, const Tokenizer& tokenizer,
                                                std::shared_ptr<http::ResponseWriter> writer,
                                                RequestQueue& queue, Done done);

  // The sink for prompt `prompt_index` (< spec.prompts).
  std::shared_ptr<RequestSink> SinkFor(size_t prompt_index);

  // Every prompt was accepted under these engine ids.
  void Start(std::vector<uint64_t> engine_ids);

  // A prompt was refused (or could not be prepared): cancels `accepted`,
  // answers `status` with `headers` (Retry-After for a 429).
  void Abort(std::vector<uint64_t> accepted, const absl::Status& status, http::Headers headers);

 private:
  struct ChoiceState {
    std::string text;
    int64_t text_chars = 0;  // Characters emitted so far (text_offset of logprobs).
    std::vector<api::TokenLogprob> logprobs;
    FinishReason finish = FinishReason::kStop;
    bool finished = false;
  };
  class Sink;

  GenerationCall(GenerationCallSpec spec, const Tokenizer& tokenizer,
                 std::shared_ptr<http::ResponseWriter> writer, RequestQueue& queue, Done done);

  void OnTokens(size_t prompt, const TokenEvent& event);
  void OnFinish(size_t prompt, int32_t choice, FinishReason reason, const std::string& message);
  void OnComplete(size_t prompt, const Usage& usage, const Timings& timings);

  api::CompletionResponse Frame() const;
  std::vector<api::TokenLogprob> Logprobs(const TokenEvent& event, int64_t offset) const;
  void Emit(std::string event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishIfDone() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RespondWhole() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the call: `done` hears the summary (and releases what it holds:
  // the model's lease), then `respond` sends the answer's last bytes. In
  // that order a client that acts on the answer, say by unloading the
  // model, finds it idle.
  void Report(int http_status, const std::function<void()>& respond) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReportError(const absl::Status& status, http::Headers headers) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const GenerationCallSpec spec_;
  const Tokenizer& tokenizer_;
  const std::shared_ptr<http::ResponseWriter> writer_;
  RequestQueue& queue_;
  const Done done_;

  template <class Call>
  friend void CancelOnClientClose(http::ResponseWriter& writer, const std::shared_ptr<Call>& call,
                                  std::vector<uint64_t> ids);

  std::mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;   // Response finished or abandoned.
  std::vector<std::string> held_ ABSL_GUARDED_BY(mu_);  // Stream events before Start.
  std::vector<ChoiceState> choices_ ABSL_GUARDED_BY(mu_);
  size_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  std::string error_ ABSL_GUARDED_BY(mu_);  // First engine error message.
  bool engine_cancelled_ ABSL_GUARDED_BY(mu_) = false;
  GenerationSummary summary_ ABSL_GUARDED_BY(mu_);
  bool have_ttft_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace swiftlet::server
