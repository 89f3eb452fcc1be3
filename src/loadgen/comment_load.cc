#include "loadgen/comment_load.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "api/request_codec.h"
#include "api/translate_codec.h"
#include "api/types.h"
#include "core/str_cat.h"
#include "http/client.h"
#include "loadgen/arrivals.h"
#include "loadgen/comment_transport.h"

namespace swiftlet::loadgen {

namespace {

constexpr int64_t kMaxComments = 10'000'000;

// The English names the chat transport puts in its prompt, by code.
std::string EnglishName(const std::string& code) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"zh-Hans", "Simplified Chinese"}, {"en", "English"},     {"vi", "Vietnamese"},
      {"th", "Thai"},                    {"id", "Indonesian"},  {"ms", "Malay"},
      {"ja", "Japanese"},                {"ko", "Korean"},      {"fil", "Filipino"},
      {"zh-Hant", "Traditional Chinese"}, {"hi", "Hindi"},      {"es", "Spanish"},
      {"pt", "Portuguese"},              {"fr", "French"},      {"de", "German"},
      {"ar", "Arabic"}};
  for (const auto& [c, name] : kNames) {
    if (code == c) return name;
  }
  return code;
}

// The chat transport's prompt, as a client without a translation API
// writes it: the instruction, the comment, then the target language.
constexpr const char* kChatInstruction =
    "You translate comments from a live video stream for viewers who speak another language. Translate "
    "the comment below into the language named after it. Keep its tone, slang, emoji, names and numbers. "
    "Reply with the translation only, on one line.";

class ChatTransport final : public CommentTransport {
 public:
  ChatTransport(const CommentLoadOptions& o, CommentTracker& tracker) : o_(o), tracker_(tracker) {
    http::HttpClientOptions c;
    c.host = o.host;
    c.port = o.port;
    c.tls = o.tls;
    c.request_timeout = std::chrono::milliseconds(o.drain_timeout_ns / kNsPerMs);
    client_ = std::make_unique<http::HttpClient>(c);
  }
  void Send(int64_t index, int64_t /*stream*/, const std::string& text) override {
    for (const std::string& language : o_.languages) {
      api::ChatCompletionRequest r;
      r.model = o_.model;
      r.messages.push_back({api::Role::kSystem, kChatInstruction, ""});
      r.messages.push_back({api::Role::kUser, StrCat("Comment:\n", text, "\n\nTarget language: ", EnglishName(language)), ""});
      r.options.max_tokens = o_.output_tokens;
      r.options.min_tokens = o_.output_tokens;
      r.options.ignore_eos = true;
      r.options.stream = true;
      http::ClientRequest req;
      req.target = StrCat(o_.prefix, "/v1/chat/completions");
      if (!o_.api_key.empty()) req.headers.Add("Authorization", "Bearer " + o_.api_key);
      req.body = api::SerializeChatCompletionRequest(r);
      http::ClientCallbacks cb;
      cb.on_done = [this, index](absl::Status status, http::ClientResponse response) {
        if (status.ok() && response.status == 200) {
          tracker_.Answer(index, CommentTracker::kResult);
        } else if (status.ok() && response.status == 429) {
          tracker_.Answer(index, CommentTracker::kRefused);
        } else {
          tracker_.Answer(index, CommentTracker::kFailed);
        }
      };
      client_->Send(std::move(req), std::move(cb));
    }
  }

 private:
  const CommentLoadOptions& o_;
  CommentTracker& tracker_;
  std::unique_ptr<http::HttpClient> client_;
};

class TranslateTransport final : public CommentTransport {
 public:
  TranslateTransport(const CommentLoadOptions& o, CommentTracker& tracker) : o_(o), tracker_(tracker) {
    http::HttpClientOptions c;
    c.host = o.host;
    c.port = o.port;
    c.tls = o.tls;
    c.request_timeout = std::chrono::milliseconds(o.drain_timeout_ns / kNsPerMs);
    client_ = std::make_unique<http::HttpClient>(c);
  }
  void Send(int64_t index, int64_t stream, const std::string& text) override {
    api::TranslateRequest r;
    r.model = o_.model;
    r.texts = {text};
    r.target_languages = o_.languages;
    r.budget_ms = std::max<int64_t>(1, o_.budget_ns / kNsPerMs);
    r.max_tokens = o_.output_tokens;
    r.ignore_eos = true;
    r.stream_id = StrCat("s", stream);
    http::ClientRequest req;
    req.target = StrCat(o_.prefix, "/v1/translate");
    if (!o_.api_key.empty()) req.headers.Add("Authorization", "Bearer " + o_.api_key);
    req.body = api::SerializeTranslateRequest(r);
    http::ClientCallbacks cb;
    const int k = static_cast<int>(o_.languages.size());
    cb.on_done = [this, index, k](absl::Status status, http::ClientResponse response) {
      if (status.ok() && response.status == 200) {
        auto parsed = api::ParseTranslateResponse(response.body);
        int answered = 0;
        if (parsed.ok()) {
          for (const api::Translation& t : parsed->translations) {
            tracker_.Answer(index, t.late ? CommentTracker::kLate : CommentTracker::kResult);
            ++answered;
          }
        }
        for (; answered < k; ++answered) tracker_.Answer(index, CommentTracker::kFailed);
        return;
      }
      const auto kind = status.ok() && response.status == 429 ? CommentTracker::kRefused : CommentTracker::kFailed;
      for (int i = 0; i < k; ++i) tracker_.Answer(index, kind);
    };
    client_->Send(std::move(req), std::move(cb));
  }

 private:
  const CommentLoadOptions& o_;
  CommentTracker& tracker_;
  std::unique_ptr<http::HttpClient> client_;
};

struct Arrival {
  int64_t offset_ns = 0;
  int64_t stream = 0;
};

std::vector<Arrival> Schedule(const CommentLoadOptions& o) {
  std::vector<Arrival> all;
  const int64_t per_stream_cap =
      o.comments > 0 ? o.comments : std::min<int64_t>(kMaxComments / o.streams,
                                                      static_cast<int64_t>(o.comment_rate * o.duration_ns / 1e9 * 2 + 16));
  for (int64_t s = 0; s < o.streams; ++s) {
    ArrivalGaps gaps(o.comment_rate, 1.0, o.seed + static_cast<uint64_t>(s) * 104729);
    int64_t t = gaps.NextNs();
    for (int64_t n = 0; n < per_stream_cap; ++n, t += gaps.NextNs()) {
      if (o.duration_ns > 0 && t >= o.duration_ns) break;
      all.push_back({t, s});
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Arrival& a, const Arrival& b) { return a.offset_ns < b.offset_ns; });
  if (o.comments > 0 && static_cast<int64_t>(all.size()) > o.comments) all.resize(static_cast<size_t>(o.comments));
  return all;
}

}  // namespace

const std::vector<std::string>& SampleComments() {
  static const std::vector<std::string>* comments = [] {
    auto* out = new std::vector<std::string>;
    const nlohmann::json j = nlohmann::json::parse(BuiltInComments(), nullptr, false);
    if (j.is_object() && j.contains("comments") && j["comments"].is_array()) {
      for (const auto& c : j["comments"]) {
        if (c.is_string() && !c.get<std::string>().empty()) out->push_back(c.get<std::string>());
      }
    }
    if (out->empty()) {
      std::fprintf(stderr, "swiftlet: the built-in comments (data/comments.json) are broken\n");
      std::abort();
    }
    return out;
  }();
  return *comments;
}

std::vector<std::string> DefaultLanguages(int k) {
  static const char* kCodes[] = {"zh-Hans", "en", "vi", "th", "id", "ms", "ja", "ko", "fil", "zh-Hant",
                                 "hi", "es", "pt", "fr", "de", "ar"};
  std::vector<std::string> out;
  for (int i = 0; i < k && i < static_cast<int>(std::size(kCodes)); ++i) out.push_back(kCodes[i]);
  return out;
}

absl::Status ValidateCommentLoad(const CommentLoadOptions& o) {
  if (o.transport != "websocket" && o.transport != "translate" && o.transport != "chat") {
    return absl::InvalidArgumentError(StrCat("--transport: \"", o.transport, "\" is not websocket, translate or chat"));
  }
  if (o.languages.empty() || o.languages.size() > 16) return absl::InvalidArgumentError("--languages: 1..16");
  if (o.streams < 1 || o.streams > 100'000) return absl::InvalidArgumentError("--streams: 1..100000");
  if (!(o.comment_rate > 0) || o.comment_rate > 10'000) {
    return absl::InvalidArgumentError("--comment-rate: each rate must be in (0, 10000] comments/s per stream");
  }
  if ((o.comments > 0) == (o.duration_ns > 0)) {
    return absl::InvalidArgumentError("bench: give exactly one of --requests (comments) and --duration");
  }
  if (o.comments > kMaxComments) return absl::InvalidArgumentError("--requests: at most 10,000,000 comments");
  if (o.budget_ns <= 0) return absl::InvalidArgumentError("--budget: must be positive");
  if (o.output_tokens < 1 || o.output_tokens > 1024) return absl::InvalidArgumentError("--output-tokens: 1..1024");
  return absl::OkStatus();
}

CommentReport SummarizeComments(const std::vector<CommentOutcome>& outcomes, int64_t budget_ns, int k) {
  CommentReport r;
  std::vector<double> latencies;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const CommentOutcome& c : outcomes) {
    if (c.warmup) continue;
    ++r.offered;
    first = std::min(first, c.arrival_ns);
    last = std::max(last, c.arrival_ns);
    const int answers = c.results + c.dropped_late + c.dropped_overflow + c.refused + c.failed;
    if (answers >= k && c.last_ns >= 0) ++r.answered;
    if (c.results_in_budget == k) ++r.within_budget;
    if (c.results == k && c.last_ns >= 0) latencies.push_back(static_cast<double>(c.last_ns - c.arrival_ns));
    r.items_dropped += c.dropped_late + c.dropped_overflow;
    r.items_refused += c.refused;
    r.items_failed += c.failed + std::max(0, k - answers);
  }
  (void)budget_ns;
  r.items = r.offered * k;
  r.latency = SummarizeLatencies(std::move(latencies));
  r.duration_s = r.offered > 1 ? static_cast<double>(last - first) / 1e9 : 0;
  if (r.duration_s > 0) {
    r.offered_per_s = static_cast<double>(r.offered) / r.duration_s;
    r.within_budget_per_s = static_cast<double>(r.within_budget) / r.duration_s;
  }
  if (r.items > 0) {
    r.drop_rate_pct = 100.0 * static_cast<double>(r.items_dropped + r.items_refused + r.items_failed) /
                      static_cast<double>(r.items);
  }
  return r;
}

CommentTracker::CommentTracker(const Clock& clock, int k, int64_t budget_ns) : clock_(clock), k_(k), budget_ns_(budget_ns) {}

void CommentTracker::Add(CommentOutcome outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  outcomes_.push_back(outcome);
}

void CommentTracker::Answer(int64_t index, Kind kind) {
  const int64_t now = clock_.NowNs();
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0 || index >= static_cast<int64_t>(outcomes_.size())) return;
  CommentOutcome& c = outcomes_[static_cast<size_t>(index)];
  const int answers = c.results + c.dropped_late + c.dropped_overflow + c.refused + c.failed;
  if (answers >= k_) return;  // A duplicate: ignored.
  switch (kind) {
    case kResult:
      ++c.results;
      if (now - c.arrival_ns <= budget_ns_) ++c.results_in_budget;
      break;
    case kLate: ++c.dropped_late; break;
    case kOverflow: ++c.dropped_overflow; break;
    case kRefused: ++c.refused; break;
    case kFailed: ++c.failed; break;
  }
  if (answers + 1 == k_) {
    c.last_ns = now;
    ++complete_;
  }
}

int64_t CommentTracker::complete() const {
  std::lock_guard<std::mutex> lock(mu_);
  return complete_;
}

std::vector<CommentOutcome> CommentTracker::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  return outcomes_;
}

absl::StatusOr<CommentRun> RunCommentLoad(const CommentLoadOptions& o, const Clock& clock,
                                          const SleepFn& sleep_until) {
  SWIFTLET_RETURN_IF_ERROR(ValidateCommentLoad(o));
  const std::vector<Arrival> schedule = Schedule(o);
  CommentTracker tracker(clock, static_cast<int>(o.languages.size()), o.budget_ns);
  std::unique_ptr<CommentTransport> transport;
  if (o.transport == "chat") {
    transport = std::make_unique<ChatTransport>(o, tracker);
  } else if (o.transport == "translate") {
    transport = std::make_unique<TranslateTransport>(o, tracker);
  } else {
    SWIFTLET_ASSIGN_OR_RETURN(transport, MakeWebSocketTransport(o, tracker));
  }
  const std::vector<std::string>& texts = SampleComments();
  const int64_t start = clock.NowNs();
  for (size_t i = 0; i < schedule.size(); ++i) {
    CommentOutcome c;
    c.stream = schedule[i].stream;
    c.index = static_cast<int64_t>(i);
    c.warmup = static_cast<int64_t>(i) < o.warmup_comments;
    c.arrival_ns = start + schedule[i].offset_ns;
    tracker.Add(c);
  }
  for (size_t i = 0; i < schedule.size(); ++i) {
    sleep_until(start + schedule[i].offset_ns);
    const std::string& text = texts[(o.seed * 31 + i) % texts.size()];
    transport->Send(static_cast<int64_t>(i), schedule[i].stream, text);
  }
  const int64_t deadline = clock.NowNs() + o.drain_timeout_ns;
  while (tracker.complete() < static_cast<int64_t>(schedule.size()) && clock.NowNs() < deadline) {
    sleep_until(clock.NowNs() + 10 * kNsPerMs);
  }
  transport.reset();  // Closes the connections; late callbacks find no comment.
  CommentRun run;
  run.outcomes = tracker.Take();
  run.duration_ns = schedule.empty() ? 0 : schedule.back().offset_ns;
  return run;
}

}  // namespace swiftlet::loadgen
