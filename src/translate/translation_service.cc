#include "translate/translation_service.h"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "api/errors.h"
#include "core/str_cat.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "translate/prompt_layout.h"
#include "translate/protected_spans.h"

namespace swiftlet::translate {
namespace {

std::string Trim(std::string s) {
  const auto space = [](unsigned char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!s.empty() && space(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && space(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

absl::Status RefusalToStatus(const SubmitResult& r) {
  switch (r.refused) {
    case RefusalReason::kInvalid: return absl::InvalidArgumentError(r.message);
    case RefusalReason::kNotReady: return absl::UnavailableError(r.message);
    default: return absl::ResourceExhaustedError(r.message);
  }
}

}  // namespace

struct TranslateJob::State {
  TranslationService* svc = nullptr;
  api::TranslateRequest request;
  JobContext ctx;
  std::vector<const Language*> targets;
  const Language* source = nullptr;
  std::vector<Masked> masked;  // Per text.
  struct Item {
    size_t text = 0;
    const Language* language = nullptr;
    std::string key;  // Cache key.
    std::string raw;  // The model's output so far.
    bool done = false;
    api::Translation out;
  };
  std::vector<Item> items;  // Text-major, then target.
  struct Group {
    size_t text = 0;
    std::vector<size_t> items;  // Choice i -> item.
    bool complete = false;
  };
  std::vector<Group> groups;
  TranslationService::ItemFn on_item;
  TranslationService::DoneFn done;
  int64_t budget_ns = 0;
  int32_t max_tokens = 0;

  std::mutex mu;
  size_t lookups_pending = 0;
  size_t groups_pending = 0;
  bool submitted = false;
  bool finished = false;
  bool cancelled = false;
  std::string error;  // First engine error.
  std::vector<uint64_t> engine_ids;
  Usage usage;
  int64_t shared_reused = 0;  // Prompt tokens the branches took from their group's shared part.
};

class TranslateJob::GroupSink final : public RequestSink {
 public:
  GroupSink(std::shared_ptr<TranslateJob> job, size_t group) : job_(std::move(job)), group_(group) {}
  void OnTokens(const TokenEvent& event) override {
    if (!event.text.empty()) job_->OnItemText(group_, event.choice, event.text);
  }
  void OnFinish(int32_t choice, FinishReason reason, const std::string& message) override {
    if (reason == FinishReason::kError) {
      std::lock_guard<std::mutex> lock(job_->s_->mu);
      if (job_->s_->error.empty()) job_->s_->error = message.empty() ? "engine error" : message;
    }
    job_->OnItemFinished(group_, choice, reason);
  }
  void OnComplete(const Usage& usage, const Timings& /*timings*/) override { job_->OnGroupComplete(group_, usage); }

 private:
  const std::shared_ptr<TranslateJob> job_;
  const size_t group_;
};

TranslationService::TranslationService(RequestQueue& engine, const Tokenizer& tokenizer,
                                       const absl::StatusOr<ChatTemplate>& chat, const LanguageTable& languages,
                                       TranslationCache* cache, TranslateMetrics& metrics,
                                       TranslationServiceConfig config, const Clock* clock)
    : engine_(engine),
      tokenizer_(tokenizer),
      chat_(chat),
      languages_(languages),
      cache_(cache),
      metrics_(metrics),
      config_(std::move(config)),
      clock_(clock ? *clock : SystemClock()) {}

absl::StatusOr<std::shared_ptr<TranslateJob>> TranslationService::Start(const api::TranslateRequest& request,
                                                                        JobContext context, ItemFn on_item,
                                                                        DoneFn done) {
  if (!chat_.ok()) {
    return api::WithParam(absl::InvalidArgumentError(StrCat("translation needs a chat template: ", chat_.status().message())),
                          "model");
  }
  auto s = std::make_unique<TranslateJob::State>();
  s->svc = this;
  for (size_t i = 0; i < request.target_languages.size(); ++i) {
    const Language* l = languages_.Find(request.target_languages[i]);
    if (l == nullptr) {
      return api::InvalidParam(StrCat("target_languages[", i, "]"),
                               StrCat("unknown language \"", request.target_languages[i], "\""));
    }
    if (std::find(s->targets.begin(), s->targets.end(), l) != s->targets.end()) {
      return api::InvalidParam(StrCat("target_languages[", i, "]"),
                               StrCat("\"", request.target_languages[i], "\" names a language already asked"));
    }
    s->targets.push_back(l);
  }
  if (request.source_language) {
    s->source = languages_.Find(*request.source_language);
    if (s->source == nullptr) {
      return api::InvalidParam("source_language", StrCat("unknown language \"", *request.source_language, "\""));
    }
  }
  s->request = request;
  s->ctx = std::move(context);
  s->on_item = std::move(on_item);
  s->done = std::move(done);
  s->budget_ns = request.budget_ms.value_or(0) * kNsPerMs;
  s->max_tokens = request.max_tokens.value_or(config_.default_max_tokens);
  for (size_t t = 0; t < request.texts.size(); ++t) {
    s->masked.push_back(Protect(request.texts[t], request.glossary.keep));
    for (const Language* l : s->targets) {
      TranslateJob::State::Item item;
      item.text = t;
      item.language = l;
      item.key = CacheKey({request.texts[t], s->source ? std::string_view(s->source->code) : std::string_view(),
                           l->code, config_.model_name, s->ctx.scope, &request.glossary.keep,
                           &request.glossary.map});
      item.out.index = static_cast<int64_t>(t);
      item.out.language = l->code;
      s->items.push_back(std::move(item));
    }
  }
  auto job = std::shared_ptr<TranslateJob>(new TranslateJob(std::move(s)));
  job->LookUp();
  return job;
}

TranslateJob::TranslateJob(std::unique_ptr<State> state) : s_(std::move(state)) {}
TranslateJob::~TranslateJob() = default;

void TranslateJob::LookUp() {
  TranslationCache* cache = s_->svc->cache_;
  if (cache == nullptr) return SubmitGroups();
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->lookups_pending = s_->items.size();
  }
  auto self = shared_from_this();
  for (size_t i = 0; i < s_->items.size(); ++i) {
    cache->Get(s_->items[i].key, [self, i](std::optional<std::string> value) { self->OnCacheAnswer(i, std::move(value)); });
  }
}

void TranslateJob::OnCacheAnswer(size_t i, std::optional<std::string> value) {
  std::optional<api::Translation> hit;
  bool all_answered = false;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    State::Item& item = s_->items[i];
    if (value) {
      item.done = true;
      item.out.text = *std::move(value);
      item.out.cached = true;
      item.out.latency_ms = static_cast<double>(s_->svc->clock_.NowNs() - s_->ctx.received_ns) / 1e6;
      hit = item.out;
    }
    all_answered = --s_->lookups_pending == 0;
  }
  if (hit) {
    s_->svc->metrics_.translations_total.Add();
    s_->svc->metrics_.translations_cached_total.Add();
    s_->svc->metrics_.ObserveLanguageLatency(hit->language, hit->latency_ms / 1e3);
    if (s_->on_item) s_->on_item(*hit);
  }
  if (all_answered) SubmitGroups();
}

void TranslateJob::SubmitGroups() {
  TranslationService& svc = *s_->svc;
  // Lay out one group per text from the languages still missing.
  std::vector<Request> requests;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (s_->cancelled) {
      s_->submitted = true;
    }
    for (size_t t = 0; t < s_->request.texts.size() && !s_->cancelled; ++t) {
      State::Group g;
      g.text = t;
      TranslationPromptSpec spec;
      spec.masked_text = s_->masked[t].text;
      spec.source = s_->source;
      spec.fixed_terms = s_->request.glossary.map;
      spec.has_placeholders = !s_->masked[t].spans.empty();
      for (size_t i = 0; i < s_->items.size(); ++i) {
        if (s_->items[i].text == t && !s_->items[i].done) {
          g.items.push_back(i);
          spec.targets.push_back(s_->items[i].language);
        }
      }
      if (g.items.empty()) continue;
      auto prompt = LayoutTranslation(*svc.chat_, svc.tokenizer_, spec);
      Request r;
      if (!prompt.ok()) {
        s_->error = std::string(prompt.status().message());
        break;
      }
      if (prompt->branches.size() == 1) {
        r.prompt = prompt->shared;
        r.prompt.insert(r.prompt.end(), prompt->branches[0].begin(), prompt->branches[0].end());
      } else {
        s_->shared_reused += static_cast<int64_t>(prompt->shared.size() * (prompt->branches.size() - 1));
        r.prompt = std::move(prompt->shared);
        r.branches = std::move(prompt->branches);
      }
      r.options.n = static_cast<int32_t>(g.items.size());
      r.options.sampling.temperature = 0;  // A translation, not a story: greedy.
      r.options.max_tokens = s_->max_tokens;
      r.options.stop = {"\n"};  // One line, as the instruction asks.
      if (s_->request.ignore_eos) {
        r.options.stop.clear();
        r.options.ignore_eos = true;
        r.options.min_tokens = r.options.max_tokens;
      }
      r.options.latency_class =
          s_->request.priority == api::Priority::kBatch ? LatencyClass::kBatch : LatencyClass::kInteractive;
      if (s_->budget_ns > 0) {
        r.options.targets.ttft_ns = std::max<int64_t>(
            1, static_cast<int64_t>(svc.config_.ttft_share_of_budget * static_cast<double>(s_->budget_ns)));
      }
      r.received_ns = s_->ctx.received_ns;
      r.cache_scope = s_->ctx.cache_scope;
      s_->groups.push_back(std::move(g));
      requests.push_back(std::move(r));
    }
    s_->groups_pending = requests.size();
  }
  std::vector<uint64_t> ids;
  for (size_t g = 0; g < requests.size(); ++g) {
    requests[g].sink = std::make_shared<GroupSink>(shared_from_this(), g);
    const SubmitResult result = svc.engine_.Submit(std::move(requests[g]));
    if (!result.accepted()) {
      for (uint64_t id : ids) svc.engine_.Cancel(id);
      TranslationService::DoneFn done;
      {
        std::lock_guard<std::mutex> lock(s_->mu);
        if (s_->finished) return;
        s_->finished = true;
        done = std::move(s_->done);
      }
      if (done) done(RefusalToStatus(result), result.retry_after_ms);
      return;
    }
    ids.push_back(result.id);
  }
  bool cancel_now = false;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->engine_ids = ids;
    s_->submitted = true;
    cancel_now = s_->cancelled;
  }
  if (cancel_now) {
    for (uint64_t id : ids) svc.engine_.Cancel(id);
  }
  FinishIfDone();
}

void TranslateJob::OnItemText(size_t group, int32_t choice, const std::string& text) {
  std::lock_guard<std::mutex> lock(s_->mu);
  const State::Group& g = s_->groups[group];
  if (choice < 0 || static_cast<size_t>(choice) >= g.items.size()) return;
  s_->items[g.items[static_cast<size_t>(choice)]].raw += text;
}

void TranslateJob::OnItemFinished(size_t group, int32_t choice, FinishReason reason) {
  TranslationService& svc = *s_->svc;
  api::Translation out;
  std::string key;
  bool cacheable = false;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    const State::Group& g = s_->groups[group];
    if (choice < 0 || static_cast<size_t>(choice) >= g.items.size()) return;
    State::Item& item = s_->items[g.items[static_cast<size_t>(choice)]];
    if (item.done) return;
    item.done = true;
    const Restored restored = Restore(Trim(item.raw), s_->masked[item.text].spans);
    item.out.text = restored.text;
    item.out.glossary_ok =
        restored.ok && MapTermsHonoured(s_->request.texts[item.text], restored.text, s_->request.glossary.map);
    const int64_t latency = svc.clock_.NowNs() - s_->ctx.received_ns;
    item.out.latency_ms = static_cast<double>(latency) / 1e6;
    item.out.late = s_->budget_ns > 0 && latency > s_->budget_ns;
    out = item.out;
    key = item.key;
    // Only whole, faithful translations are worth keeping.
    cacheable = item.out.glossary_ok && (reason == FinishReason::kStop || reason == FinishReason::kLength);
    if (reason == FinishReason::kCancelled || reason == FinishReason::kError) return;
  }
  svc.metrics_.translations_total.Add();
  if (!out.glossary_ok) svc.metrics_.glossary_failures_total.Add();
  svc.metrics_.ObserveLanguageLatency(out.language, out.latency_ms / 1e3);
  if (cacheable && svc.cache_ != nullptr) svc.cache_->Put(key, out.text);
  if (s_->on_item) s_->on_item(out);
}

void TranslateJob::OnGroupComplete(size_t group, const Usage& usage) {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->groups[group].complete = true;
    s_->usage.prompt_tokens += usage.prompt_tokens;
    s_->usage.completion_tokens += usage.completion_tokens;
    s_->usage.cached_prompt_tokens += usage.cached_prompt_tokens;
    s_->groups_pending -= 1;
  }
  FinishIfDone();
}

void TranslateJob::FinishIfDone() {
  absl::StatusOr<api::TranslateResponse> result;
  TranslationService::DoneFn done;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (s_->finished || !s_->submitted || s_->lookups_pending > 0 || s_->groups_pending > 0) return;
    s_->finished = true;
    done = std::move(s_->done);
    if (!s_->error.empty()) {
      result = absl::InternalError(s_->error);
    } else if (s_->cancelled) {
      result = absl::CancelledError("the translation was cancelled");
    } else {
      api::TranslateResponse r;
      r.model = s_->svc->config_.model_name;
      for (const State::Item& item : s_->items) r.translations.push_back(item.out);
      r.prompt_tokens = s_->usage.prompt_tokens;
      r.completion_tokens = s_->usage.completion_tokens;
      r.cached_tokens = s_->usage.cached_prompt_tokens + s_->shared_reused;
      result = std::move(r);
    }
  }
  if (done) done(std::move(result), 0);
}

void TranslateJob::Cancel() {
  std::vector<uint64_t> ids;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->cancelled = true;
    ids = s_->engine_ids;
  }
  for (uint64_t id : ids) s_->svc->engine_.Cancel(id);
}

}  // namespace swiftlet::translate
