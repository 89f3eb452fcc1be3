// The live-translation load: comments of S live streams, each translated
// into K languages, measured per comment — the flagship job's own figures.
// `swiftlet bench --workload live-comments --transport T` runs it.
//
// Each stream sends comments as a Poisson process at --comment-rate per
// second; a comment's text is a real short chat comment from
// data/comments.json (several scripts, emoji, handles). Transports:
//   websocket  one WebSocket per stream (/v1/translate/stream): each
//              comment goes out as a message; K results or drop notices
//              come back.
//   translate  one POST /v1/translate per comment, the K languages in it.
//   chat       K chat completions per comment, one per language (what a
//              client does without a translation API), each with the
//              instruction, the comment, then the target language.
// Every translation asks the same work (output_tokens, forced: ignore_eos).
//
// A comment is delivered within budget when all K of its languages came
// back as results within budget of its arrival; its latency is the time
// until the last of its K answers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/clock.h"
#include "http/tls_options.h"
#include "loadgen/load_stats.h"

namespace swiftlet::loadgen {

struct CommentLoadOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::string prefix;                   // URL path before /v1.
  std::string transport = "websocket";  // websocket | translate | chat
  std::string model;
  std::vector<std::string> languages;   // K target codes.
  int64_t streams = 1;
  double comment_rate = 1;              // Per stream, comments per second.
  int64_t comments = 0;                 // Stop after this many (all streams); or
  int64_t duration_ns = 0;              // sending after this long.
  int64_t warmup_comments = 0;          // The first ones; left out of the figures.
  int64_t budget_ns = 800 * kNsPerMs;
  int32_t output_tokens = 32;
  int64_t drain_timeout_ns = 60 * kNsPerSecond;
  uint64_t seed = 1;
  std::string api_key;  // Sent as a Bearer token; empty: none.
  http::TlsClientOptions tls;           // https / wss when tls.use_tls.
};

absl::Status ValidateCommentLoad(const CommentLoadOptions& o);

// The K codes bench uses for --languages K: the markets of the flagship
// deployment first.
std::vector<std::string> DefaultLanguages(int k);

struct CommentOutcome {
  int64_t stream = 0;
  int64_t index = 0;        // Send order, all streams.
  bool warmup = false;
  int64_t arrival_ns = 0;   // Scheduled.
  int64_t last_ns = -1;     // The last of its K answers; -1: not all came.
  int results = 0;          // Translations received.
  int results_in_budget = 0;
  int dropped_late = 0;     // Drop notices, or the server's "late" items.
  int dropped_overflow = 0;
  int refused = 0;          // Languages refused (429).
  int failed = 0;           // Errors, timeouts, anything else.
};

struct CommentReport {
  int64_t offered = 0;            // Comments, warm-up left out.
  int64_t answered = 0;           // Every language answered (a result or a drop).
  int64_t within_budget = 0;      // Every language a result within budget.
  int64_t items = 0;              // offered * K
  int64_t items_dropped = 0;      // late + overflow
  int64_t items_refused = 0;
  int64_t items_failed = 0;
  LatencySummary latency;         // Of comments with all K results.
  double duration_s = 0;
  double offered_per_s = 0;
  double within_budget_per_s = 0;
  double drop_rate_pct = 0;       // Of items: dropped + refused + failed.
};

CommentReport SummarizeComments(const std::vector<CommentOutcome>& outcomes, int64_t budget_ns, int k);

struct CommentRun {
  std::vector<CommentOutcome> outcomes;  // In send order.
  int64_t duration_ns = 0;               // First to last scheduled arrival.
};

// Blocks until every comment is answered or the drain timeout passes.
absl::StatusOr<CommentRun> RunCommentLoad(const CommentLoadOptions& options, const Clock& clock,
                                          const SleepFn& sleep_until);

// The comments shipped in data/comments.json.
const std::vector<std::string>& SampleComments();
// That file's bytes (generated at build time).
std::string_view BuiltInComments();

}  // namespace swiftlet::loadgen
