#include "translate/live_stream.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "api/errors.h"
#include "core/str_cat.h"

namespace swiftlet::translate {
namespace {

constexpr size_t kMaxQueueLimit = 1024;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// application/x-www-form-urlencoded: %XX and '+'.
absl::StatusOr<std::string> Unescape(std::string_view s, std::string_view param) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size()) {
        return api::InvalidParam(param, "a cut-off %-escape");
      }
      const int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return api::InvalidParam(param, "a bad %-escape");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

absl::StatusOr<int64_t> Integer(std::string_view v, std::string_view param, int64_t lo, int64_t hi) {
  if (v.empty() || v.size() > 12) return api::InvalidParam(param, StrCat("expected an integer in ", lo, "..", hi));
  int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return api::InvalidParam(param, StrCat("expected an integer in ", lo, "..", hi));
    n = n * 10 + (c - '0');
  }
  if (n < lo || n > hi) return api::InvalidParam(param, StrCat("expected an integer in ", lo, "..", hi));
  return n;
}

std::vector<std::string> SplitCommas(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    if (comma > start) out.emplace_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

int64_t NowOf(const TranslationService& s) { return s.clock().NowNs(); }

}  // namespace

absl::StatusOr<LiveStreamOptions> ParseLiveStreamQuery(std::string_view query, const LanguageTable& languages) {
  LiveStreamOptions o;
  bool have_languages = false;
  size_t start = 0;
  while (start < query.size()) {
    const size_t amp = std::min(query.find('&', start), query.size());
    const std::string_view pair = query.substr(start, amp - start);
    start = amp + 1;
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    const std::string key(pair.substr(0, eq));
    SWIFTLET_ASSIGN_OR_RETURN(std::string value,
                              Unescape(eq == std::string_view::npos ? "" : pair.substr(eq + 1), key));
    if (key == "languages") {
      SWIFTLET_ASSIGN_OR_RETURN(o.languages, api::ParseLanguageList(value, "languages"));
      for (std::string& code : o.languages) {
        const Language* l = languages.Find(code);
        if (l == nullptr) return api::InvalidParam("languages", StrCat("unknown language \"", code, "\""));
        code = l->code;
      }
      for (size_t i = 0; i < o.languages.size(); ++i) {
        if (std::count(o.languages.begin(), o.languages.end(), o.languages[i]) > 1) {
          return api::InvalidParam("languages", StrCat("\"", o.languages[i], "\" is asked twice"));
        }
      }
      have_languages = true;
    } else if (key == "budget_ms") {
      SWIFTLET_ASSIGN_OR_RETURN(o.budget_ms, Integer(value, key, 1, api::kMaxTranslateBudgetMs));
    } else if (key == "max_tokens") {
      SWIFTLET_ASSIGN_OR_RETURN(int64_t n, Integer(value, key, 1, api::kMaxTranslateTokens));
      o.max_tokens = static_cast<int32_t>(n);
    } else if (key == "max_queue") {
      SWIFTLET_ASSIGN_OR_RETURN(int64_t n, Integer(value, key, 1, kMaxQueueLimit));
      o.max_queue = static_cast<size_t>(n);
    } else if (key == "ignore_eos") {
      if (value != "0" && value != "1" && value != "true" && value != "false") {
        return api::InvalidParam(key, "expected 1, 0, true or false");
      }
      o.ignore_eos = value == "1" || value == "true";
    } else if (key == "source" || key == "source_language") {
      const Language* l = languages.Find(value);
      if (l == nullptr) return api::InvalidParam(key, StrCat("unknown language \"", value, "\""));
      o.source_language = l->code;
    } else if (key == "keep") {
      o.glossary.keep = SplitCommas(value);
      if (o.glossary.keep.size() > api::kMaxGlossaryTerms) {
        return api::InvalidParam("keep", StrCat("at most ", api::kMaxGlossaryTerms, " terms"));
      }
      for (const std::string& t : o.glossary.keep) {
        if (t.size() > api::kMaxGlossaryTermBytes) return api::InvalidParam("keep", "a term is too long");
      }
    }
    // Unknown parameters are ignored, as unknown JSON fields are.
  }
  if (!have_languages) return api::InvalidParam("languages", "required, e.g. languages=en,ja");
  return o;
}

struct LiveStream::Comment {
  uint64_t seq = 0;
  std::string id;
  std::string text;
  int64_t received_ns = 0;
  int64_t deadline_ns = 0;
  enum class State { kQueued, kRunning, kDone } state = State::kQueued;
  std::shared_ptr<TranslateJob> job;
  struct Slot {
    bool resolved = false;
    bool sent = false;
    bool late_if_past_deadline = true;  // A result (a drop notice is sent as is).
    std::string message;
  };
  std::vector<Slot> slots;  // Per stream language.
};

std::shared_ptr<LiveStream> LiveStream::Create(TranslationService& service, LiveStreamOptions options, SendFn send) {
  service.metrics().streams_active.Add(1);
  return std::shared_ptr<LiveStream>(new LiveStream(service, std::move(options), std::move(send)));
}

LiveStream::LiveStream(TranslationService& service, LiveStreamOptions options, SendFn send)
    : service_(service), options_(std::move(options)), send_(std::move(send)) {}

LiveStream::~LiveStream() { Close(); }

size_t LiveStream::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& c : comments_) n += c->state == Comment::State::kQueued;
  return n;
}

LiveStream::Comment* LiveStream::Find(uint64_t seq) {
  for (auto& c : comments_) {
    if (c->seq == seq) return c.get();
  }
  return nullptr;
}

void LiveStream::OnMessage(std::string_view message) {
  TranslateMetrics& m = service_.metrics();
  auto comment = api::ParseStreamComment(message);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    if (!comment.ok()) {
      api::StreamResult error;
      error.error = std::string(comment.status().message());
      send_(api::SerializeStreamResult(error));
      return;
    }
    m.stream_comments_total.Add();
    auto c = std::make_unique<Comment>();
    c->seq = next_seq_++;
    c->id = std::move(comment->id);
    c->text = std::move(comment->text);
    c->received_ns = NowOf(service_);
    c->deadline_ns = c->received_ns + options_.budget_ms * kNsPerMs;
    c->slots.resize(options_.languages.size());
    size_t waiting = 0;
    Comment* oldest = nullptr;
    for (auto& x : comments_) {
      if (x->state != Comment::State::kQueued) continue;
      ++waiting;
      if (oldest == nullptr) oldest = x.get();
    }
    if (waiting >= options_.max_queue && oldest != nullptr) {
      // The oldest waiting comment makes room: it is the likeliest to miss
      // its budget anyway.
      DropAll(*oldest, "overflow");
      m.dropped_overflow_total.Add();
      --waiting;
    }
    m.stream_queue_depth.Observe(static_cast<double>(waiting));
    comments_.push_back(std::move(c));
    Deliver();
  }
  StartWaiting();
}

void LiveStream::StartWaiting() {
  for (;;) {
    uint64_t seq = 0;
    api::TranslateRequest request;
    JobContext ctx;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_ || running_ >= options_.max_in_flight) return;
      Comment* next = nullptr;
      for (auto& c : comments_) {
        if (c->state == Comment::State::kQueued) {
          next = c.get();
          break;
        }
      }
      if (next == nullptr) return;
      if (NowOf(service_) >= next->deadline_ns) {
        DropAll(*next, "late");
        service_.metrics().dropped_late_total.Add(options_.languages.size());
        Deliver();
        continue;
      }
      next->state = Comment::State::kRunning;
      ++running_;
      seq = next->seq;
      request.texts = {next->text};
      request.target_languages = options_.languages;
      if (!options_.source_language.empty()) request.source_language = options_.source_language;
      request.glossary = options_.glossary;
      request.budget_ms = options_.budget_ms;
      if (options_.max_tokens > 0) request.max_tokens = options_.max_tokens;
      request.ignore_eos = options_.ignore_eos;
      ctx.received_ns = next->received_ns;
      ctx.scope = options_.scope;
      ctx.cache_scope = options_.cache_scope;
    }
    std::weak_ptr<LiveStream> weak = weak_from_this();
    auto job = service_.Start(
        request, ctx,
        [weak, seq](const api::Translation& item) {
          if (auto self = weak.lock()) self->OnItem(seq, item);
        },
        [weak, seq](absl::StatusOr<api::TranslateResponse> r, int64_t) {
          if (auto self = weak.lock()) self->OnDone(seq, !r.ok());
        });
    std::lock_guard<std::mutex> lock(mu_);
    Comment* c = Find(seq);
    if (!job.ok()) {
      if (c != nullptr && c->state == Comment::State::kRunning) {
        c->state = Comment::State::kDone;
        --running_;
        DropAll(*c, "late");
        Deliver();
      }
      continue;
    }
    if (c != nullptr && c->state == Comment::State::kRunning) {
      c->job = *job;
      if (closed_) c->job->Cancel();
    }
  }
}

void LiveStream::OnItem(uint64_t seq, const api::Translation& item) {
  std::lock_guard<std::mutex> lock(mu_);
  Comment* c = Find(seq);
  if (c == nullptr || closed_) return;
  const auto it = std::find(options_.languages.begin(), options_.languages.end(), item.language);
  if (it == options_.languages.end()) return;
  api::StreamResult r;
  r.id = c->id;
  r.language = item.language;
  r.text = item.text;
  r.latency_ms = item.latency_ms;
  r.glossary_ok = item.glossary_ok;
  Resolve(*c, static_cast<size_t>(it - options_.languages.begin()), api::SerializeStreamResult(r));
  Deliver();
}

void LiveStream::OnDone(uint64_t seq, bool failed) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Comment* c = Find(seq);
    if (c != nullptr && c->state == Comment::State::kRunning) {
      c->state = Comment::State::kDone;
      c->job.reset();
      --running_;
      // Refused, cancelled at its deadline or failed: what did not come is
      // dropped.
      size_t dropped = 0;
      for (size_t i = 0; i < c->slots.size(); ++i) {
        if (!c->slots[i].resolved) ++dropped;
      }
      if (dropped > 0 || failed) {
        DropAll(*c, "late");
        service_.metrics().dropped_late_total.Add(dropped);
      }
      if (!closed_) Deliver();
    }
  }
  StartWaiting();
}

void LiveStream::Resolve(Comment& c, size_t language, std::string message) {
  Comment::Slot& s = c.slots[language];
  if (s.resolved) return;
  s.resolved = true;
  s.message = std::move(message);
}

void LiveStream::DropAll(Comment& c, const char* why) {
  if (c.state == Comment::State::kQueued) c.state = Comment::State::kDone;
  for (size_t i = 0; i < c.slots.size(); ++i) {
    if (c.slots[i].resolved) continue;
    api::StreamResult r;
    r.id = c.id;
    r.language = options_.languages[i];
    r.dropped = why;
    Resolve(c, i, api::SerializeStreamResult(r));
    c.slots[i].late_if_past_deadline = false;
  }
}

void LiveStream::Deliver() {
  if (closed_) return;
  const int64_t now = NowOf(service_);
  for (size_t lang = 0; lang < options_.languages.size(); ++lang) {
    for (auto& c : comments_) {
      Comment::Slot& s = c->slots[lang];
      if (s.sent) continue;
      if (!s.resolved) break;  // Later comments wait for this one.
      if (s.late_if_past_deadline && now > c->deadline_ns) {
        api::StreamResult r;
        r.id = c->id;
        r.language = options_.languages[lang];
        r.dropped = "late";
        s.message = api::SerializeStreamResult(r);
        service_.metrics().dropped_late_total.Add();
      }
      send_(std::move(s.message));
      s.sent = true;
    }
  }
  // A comment whose every language went out, and whose work is over, is done.
  while (!comments_.empty()) {
    const Comment& front = *comments_.front();
    const bool all_sent = std::all_of(front.slots.begin(), front.slots.end(), [](const Comment::Slot& s) { return s.sent; });
    if (!all_sent || front.state == Comment::State::kRunning) break;
    comments_.pop_front();
  }
}

void LiveStream::Tick() {
  std::vector<std::shared_ptr<TranslateJob>> cancel;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    const int64_t now = NowOf(service_);
    for (auto& c : comments_) {
      if (now < c->deadline_ns) continue;
      if (c->state == Comment::State::kQueued) {
        size_t n = 0;
        for (const auto& s : c->slots) n += !s.resolved;
        DropAll(*c, "late");
        service_.metrics().dropped_late_total.Add(n);
      } else if (c->state == Comment::State::kRunning && c->job != nullptr) {
        cancel.push_back(c->job);
      }
    }
    Deliver();
  }
  for (auto& job : cancel) job->Cancel();
}

void LiveStream::Close() {
  std::vector<std::shared_ptr<TranslateJob>> cancel;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    for (auto& c : comments_) {
      if (c->job != nullptr) cancel.push_back(c->job);
    }
  }
  service_.metrics().streams_active.Add(-1);
  for (auto& job : cancel) job->Cancel();
}

StreamHub::StreamHub() {
  thread_ = std::thread([this] { Loop(); });
}

StreamHub::~StreamHub() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  for (auto& w : streams_) {
    if (auto s = w.lock()) s->Close();
  }
}

void StreamHub::Add(const std::shared_ptr<LiveStream>& stream) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.push_back(stream);
}

void StreamHub::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::milliseconds(kTickMs));
    if (stop_) break;
    std::erase_if(streams_, [](const std::weak_ptr<LiveStream>& w) { return w.expired(); });
    std::vector<std::shared_ptr<LiveStream>> live;
    for (auto& w : streams_) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
    lock.unlock();
    for (auto& s : live) s->Tick();
    live.clear();
    lock.lock();
  }
}

}  // namespace swiftlet::translate
