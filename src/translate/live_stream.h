// A live translation stream: the comments of one live video stream, each
// translated into the stream's K languages and delivered within a budget
// (GET /v1/translate/stream is its WebSocket; the transport is the
// server's, this is the logic).
//
// Rules, per stream:
//   - Order: for each language, results go out in comment order; a result
//     that finishes early waits for the comments before it.
//   - Budget: a comment's deadline is its arrival + budget. A result that
//     would go out after its deadline is replaced by a drop notice
//     ({"id", "language", "dropped": "late"}) — never a late result. Work
//     still running at its deadline is cancelled; a comment still queued at
//     its deadline is dropped without being computed.
//   - Bounded queue: at most max_queue comments wait to start; when a new
//     one arrives to a full queue, the oldest waiting one is dropped with
//     notices ("dropped": "overflow").
//   - Fairness: a stream has at most max_in_flight comments in the engine
//     at once, so a chatty stream queues (and overflows) on its own side
//     instead of filling the engine's queue ahead of the others.
//   - Every comment is answered: one message per language, a result or a
//     drop notice (or one error message for a comment that does not parse).
//
// StreamHub runs one thread that checks every stream's deadlines
// (kTickMs apart) so expiry does not wait for the next event.
//
// Threads: OnMessage from the transport's thread, job callbacks from the
// engine's, Tick from the hub's; one mutex per stream. `send` must be
// thread-safe and must not block or call back into the stream (a
// WebSocket's SendText).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "api/translate_codec.h"
#include "translate/translation_service.h"

namespace swiftlet::translate {

struct LiveStreamOptions {
  std::vector<std::string> languages;  // Target codes, known to the service.
  std::string source_language;         // "" detects.
  api::Glossary glossary;
  int64_t budget_ms = 800;
  int32_t max_tokens = 0;  // 0: the service's default.
  size_t max_queue = 32;
  size_t max_in_flight = 2;
  bool ignore_eos = false;  // Load testing: see api::TranslateRequest.
  std::string scope;         // The caller's cache scopes (JobContext).
  uint64_t cache_scope = 0;
};

// The stream's query string (languages=en,ja&budget_ms=800&source=en&
// keep=Term1,Term2&max_tokens=N&max_queue=N&ignore_eos=1), checked against the
// service's language table; InvalidArgument naming the parameter.
absl::StatusOr<LiveStreamOptions> ParseLiveStreamQuery(std::string_view query, const LanguageTable& languages);

class LiveStream : public std::enable_shared_from_this<LiveStream> {
 public:
  using SendFn = std::function<void(std::string message)>;
  static std::shared_ptr<LiveStream> Create(TranslationService& service, LiveStreamOptions options, SendFn send);
  ~LiveStream();

  // One client message: a comment ({"id", "text"}).
  void OnMessage(std::string_view message);
  // The client went away: running work is cancelled, nothing more is sent.
  void Close();
  // Deadlines: cancels late work, drops late queued comments, delivers.
  void Tick();

  size_t queued() const;

 private:
  struct Comment;
  LiveStream(TranslationService& service, LiveStreamOptions options, SendFn send);
  void StartWaiting();  // Without the lock held.
  void OnItem(uint64_t seq, const api::Translation& item);
  void OnDone(uint64_t seq, bool failed);
  void Resolve(Comment& c, size_t language, std::string message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropAll(Comment& c, const char* why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Deliver() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Comment* Find(uint64_t seq) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  TranslationService& service_;
  const LiveStreamOptions options_;
  const SendFn send_;

  mutable std::mutex mu_;
  std::deque<std::unique_ptr<Comment>> comments_ ABSL_GUARDED_BY(mu_);  // Not yet fully delivered, in order.
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  size_t running_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

class StreamHub {
 public:
  static constexpr int kTickMs = 10;
  StreamHub();
  ~StreamHub();  // Stops the thread; streams still open are closed.
  void Add(const std::shared_ptr<LiveStream>& stream);

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable wake_;
  std::vector<std::weak_ptr<LiveStream>> streams_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace swiftlet::translate
