// The translation service behind POST /v1/translate and the live streams:
// one comment into K languages as one engine request group (the shared
// part of the K prompts computed once, translate/prompt_layout.h),
// protected spans masked and restored (translate/protected_spans.h),
// finished translations cached (translate/translation_cache.h).
//
// A job, per call: the texts and targets are checked (InvalidArgument
// naming the field, at once); each (text, language) is looked up in the
// cache; the languages missing for a text become one engine group; every
// group is submitted, and if any is refused the others are cancelled and
// the job fails with the refusal (the caller answers 429 before any byte).
// Each item is reported as it finishes (on_item), then the whole response
// (done). Latencies count from the request's arrival.
//
// Threads: Start on any thread; on_item and done run on the engine thread
// or a cache thread and must be quick (hand off to a writer). A job lives
// until done has run; Cancel (the client went away) cancels its engine work.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "api/translate_codec.h"
#include "core/clock.h"
#include "core/status.h"
#include "engine/request.h"
#include "translate/languages.h"
#include "translate/translate_metrics.h"
#include "translate/translation_cache.h"

namespace swiftlet {
class ChatTemplate;  // text/chat_template.h
class Tokenizer;     // text/tokenizer.h
}  // namespace swiftlet

namespace swiftlet::translate {

struct TranslationServiceConfig {
  std::string model_name;
  int32_t default_max_tokens = 48;  // Live comments: tens of tokens per language.
  // Of a budget, the share given to the time to first token (admission
  // refuses a group that cannot start within it; the rest is for decoding).
  double ttft_share_of_budget = 0.5;
};

// What a job needs besides the request.
struct JobContext {
  int64_t received_ns = 0;  // On the service's clock.
  std::string scope;        // Tenant for the cache key ("" global).
  uint64_t cache_scope = 0;  // The engine's prefix-cache scope (engine/request.h).
};

class TranslateJob;

class TranslationService {
 public:
  using ItemFn = std::function<void(const api::Translation& item)>;
  // The whole response, or why the job failed (a refusal: ResourceExhausted
  // or Unavailable, with retry_after_ms; an engine error: Internal).
  using DoneFn = std::function<void(absl::StatusOr<api::TranslateResponse> response, int64_t retry_after_ms)>;

  // Everything passed must outlive the service; `chat` may hold an error
  // (translation then answers 400 with it); `cache` may be null.
  TranslationService(RequestQueue& engine, const Tokenizer& tokenizer, const absl::StatusOr<ChatTemplate>& chat,
                     const LanguageTable& languages, TranslationCache* cache, TranslateMetrics& metrics,
                     TranslationServiceConfig config, const Clock* clock = nullptr);

  // Checks and starts a job. A bad request is InvalidArgument (or the chat
  // template's error) at once; otherwise `done` runs exactly once later.
  absl::StatusOr<std::shared_ptr<TranslateJob>> Start(const api::TranslateRequest& request, JobContext context,
                                                      ItemFn on_item, DoneFn done);

  const Clock& clock() const { return clock_; }
  TranslationCache* cache() const { return cache_; }
  const LanguageTable& languages() const { return languages_; }
  TranslateMetrics& metrics() const { return metrics_; }

 private:
  friend class TranslateJob;
  RequestQueue& engine_;
  const Tokenizer& tokenizer_;
  const absl::StatusOr<ChatTemplate>& chat_;
  const LanguageTable& languages_;
  TranslationCache* const cache_;
  TranslateMetrics& metrics_;
  const TranslationServiceConfig config_;
  const Clock& clock_;
};

// One call's work. Thread-safe.
class TranslateJob : public std::enable_shared_from_this<TranslateJob> {
 public:
  // Cancels every engine request still running; done still runs (with
  // whatever finished) once the engine has let go of them.
  void Cancel();
  ~TranslateJob();

 private:
  friend class TranslationService;
  struct State;
  class GroupSink;
  explicit TranslateJob(std::unique_ptr<State> state);
  void LookUp();
  void OnCacheAnswer(size_t item, std::optional<std::string> value);
  void SubmitGroups();
  void OnItemText(size_t group, int32_t choice, const std::string& text);
  void OnItemFinished(size_t group, int32_t choice, FinishReason reason);
  void OnGroupComplete(size_t group, const Usage& usage);
  void FinishIfDone();

  std::unique_ptr<State> s_;
};

}  // namespace swiftlet::translate
