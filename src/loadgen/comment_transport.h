// Internal to the live-translation load (loadgen/comment_load.h): how a
// comment is sent and how its K answers are counted.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/clock.h"
#include "core/status.h"
#include "loadgen/comment_load.h"

namespace swiftlet::loadgen {

// Counts each comment's answers as they come (from any client thread).
class CommentTracker {
 public:
  enum Kind { kResult, kLate, kOverflow, kRefused, kFailed };
  CommentTracker(const Clock& clock, int k, int64_t budget_ns);
  void Add(CommentOutcome outcome);  // In index order, before its sends.
  // One language of comment `index` answered now; past K answers, ignored.
  void Answer(int64_t index, Kind kind);
  int64_t complete() const;  // Comments with all K answers.
  std::vector<CommentOutcome> Take();

 private:
  const Clock& clock_;
  const int k_;
  const int64_t budget_ns_;
  mutable std::mutex mu_;
  std::vector<CommentOutcome> outcomes_ ABSL_GUARDED_BY(mu_);
  int64_t complete_ ABSL_GUARDED_BY(mu_) = 0;
};

class CommentTransport {
 public:
  virtual ~CommentTransport() = default;
  // Sends comment `index` of `stream`; its answers go to the tracker.
  virtual void Send(int64_t index, int64_t stream, const std::string& text) = 0;
};

// One WebSocket per stream (loadgen/comment_websocket.cc); fails when the
// streams cannot be opened.
absl::StatusOr<std::unique_ptr<CommentTransport>> MakeWebSocketTransport(const CommentLoadOptions& o,
                                                                         CommentTracker& tracker);

}  // namespace swiftlet::loadgen
