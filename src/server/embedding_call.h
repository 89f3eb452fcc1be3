// The bridge between one HTTP request for /v1/embeddings and the engine
// requests serving it: one embedding request per input, all in the
// engine's embedding class (same batches, same admission as generation).
// The response is whole: the vectors in input order once every input is
// done.
//
// Life of a call, as GenerationCall's: the handler creates it, Submits one
// engine request per input with SinkFor(i), then Start(ids) when all were
// accepted, or Abort(...) when one was refused (the accepted ones are
// cancelled and the client gets the refusal, e.g. 429 with Retry-After).
// A client that goes away cancels every engine request. `done` runs exactly
// once with the HTTP status and the usage.
//
// Thread-safe: sinks run on the engine thread, Start/Abort on an I/O
// thread; one mutex orders them.
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

namespace swiftlet::server {

struct EmbeddingCallSpec {
  std::string model;
  api::EmbeddingEncoding encoding = api::EmbeddingEncoding::kFloat;
  size_t inputs = 1;
};

struct EmbeddingSummary {
  int http_status = 200;  // 499: the client went away first.
  Usage usage;
  Timings timings;        // Of the slowest input.
};

class EmbeddingCall : public std::enable_shared_from_this<EmbeddingCall> {
 public:
  using Done = std::function<void(const EmbeddingSummary&)>;

  // `queue` must outlive every engine request of this call.
  static std::shared_ptr<EmbeddingCall> Create(EmbeddingCallSpec spec, std::shared_ptr<http::ResponseWriter> writer,
                                               RequestQueue& queue, Done done);

  // The sink for input `index` (< spec.inputs).
  std::shared_ptr<RequestSink> SinkFor(size_t index);
  // Every input was accepted under these engine ids.
  void Start(std::vector<uint64_t> engine_ids);
  // An input was refused: cancels `accepted`, answers `status` with
  // `headers`.
  void Abort(std::vector<uint64_t> accepted, const absl::Status& status, http::Headers headers);

 private:
  class Sink;

  EmbeddingCall(EmbeddingCallSpec spec, std::shared_ptr<http::ResponseWriter> writer, RequestQueue& queue,
                Done done);
  void OnEmbedding(size_t index, const std::vector<float>& embedding);
  void OnFinish(FinishReason reason, const std::string& message);
  void OnComplete(const Usage& usage, const Timings& timings);
  void FinishIfDone() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // As GenerationCall's: `done` first (it releases the model's lease),
  // then `respond` sends the answer.
  void Report(int http_status, const std::function<void()>& respond) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReportError(const absl::Status& status, http::Headers headers) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const EmbeddingCallSpec spec_;
  const std::shared_ptr<http::ResponseWriter> writer_;
  RequestQueue& queue_;
  const Done done_;

  template <class Call>
  friend void CancelOnClientClose(http::ResponseWriter& writer, const std::shared_ptr<Call>& call,
                                  std::vector<uint64_t> ids);

  std::mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::vector<float>> embeddings_ ABSL_GUARDED_BY(mu_);
  size_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  std::string error_ ABSL_GUARDED_BY(mu_);  // First engine error.
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;  // By the engine (shutdown).
  EmbeddingSummary summary_ ABSL_GUARDED_BY(mu_);
};

}  // namespace swiftlet::server
