// Emission: drawing the choices' next tokens (on the host pool, several
// rows at once), then on the engine thread stop rules and the incremental
// detokenizer, token events to the request's sink, and the finish and
// completion of choices and requests.
#include <algorithm>
#include <cmath>

#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "model/model.h"
#include "text/tokenizer.h"

namespace swiftlet {

void Engine::FinishChoice(Active& a, Choice& c, FinishReason reason, const std::string& message) {
  if (c.seq >= 0) {
    (void)parts_->kv.Free(c.seq);
    c.seq = -1;
  }
  c.finished = true;
  c.feed = 0;
  if (c.index == 0) a.finish_reason = reason;
  a.request.sink->OnFinish(c.index, reason, message);
}

void Engine::ObserveFirstToken(Active& a, int64_t now) {
  a.first_token_ns = now;
  const int64_t ttft = now - a.request.received_ns;
  // Interactive requests only: batch ones wait behind interactive work that
  // arrives after them by design, and embeddings are planned apart. Small
  // plans are mostly fixed overheads, whose ratio says little about the
  // queue that admission decides on. The band is of *planned* times
  // (estimate × factor, at most 0.9 of the target once admitted), so it
  // does not shrink as the factor grows and the factor can come down.
  if (a.request.options.latency_class != LatencyClass::kInteractive || a.ttft_estimate_ns <= 0 ||
      a.targets.ttft_ns <= 0 || 4 * a.ttft_planned_ns < a.targets.ttft_ns) {
    return;
  }
  // Stochastic quantile tracking in log space: up by 0.97 step when the
  // measurement is above the current value, down by 0.03 otherwise, so the
  // value settles where 3% of the ratios are above it (and comes down
  // about 0.3% per request once the extra time is gone).
  constexpr double kQuantile = 0.97, kStep = 0.1, kMaxFactor = 4.0;
  const double ratio = static_cast<double>(ttft) / static_cast<double>(a.ttft_estimate_ns);
  std::lock_guard<std::mutex> lock(mu_);
  double& f = state_.ttft_error_factor;
  f *= std::exp(ratio > f ? kStep * kQuantile : -kStep * (1 - kQuantile));
  f = std::clamp(f, 1.0, kMaxFactor);
}

void Engine::FinishEmbedding(Active& a, Choice& c, int64_t now) {
  a.prompt_done = true;
  a.prompt_done_ns = now;
  ObserveFirstToken(a, now);  // Its "first token" is the embedding.
  metrics_.prompt_tokens_total.Add(a.request.prompt.size());
  a.request.sink->OnEmbedding(a.pooled->Normalized());
  FinishChoice(a, c, FinishReason::kStop, "");
}

void Engine::CompleteIfDone(Active& a) {
  if (!a.AllFinished()) return;
  Usage usage;
  usage.prompt_tokens = static_cast<int64_t>(a.request.prompt.size());
  for (const auto& b : a.request.branches) usage.prompt_tokens += static_cast<int64_t>(b.size());
  usage.completion_tokens = a.completion_tokens;
  usage.cached_prompt_tokens = a.cached_tokens;
  Timings t;
  const int64_t now = clock_.NowNs();
  t.received_ns = a.request.received_ns;
  t.queued_ns = (a.first_prefill_ns >= 0 ? a.first_prefill_ns : now) - a.request.received_ns;
  t.prefill_ns = a.prompt_done_ns >= 0 && a.first_prefill_ns >= 0 ? a.prompt_done_ns - a.first_prefill_ns : 0;
  t.ttft_ns = a.first_token_ns >= 0 ? a.first_token_ns - a.request.received_ns : -1;
  t.ttft_estimate_ns = a.ttft_estimate_ns;
  const Choice& c0 = a.choices.front();
  t.tpot_ns = c0.n_output > 1 ? (c0.last_token_ns - c0.first_token_ns) / (c0.n_output - 1) : 0;
  t.e2e_ns = now - a.request.received_ns;
  metrics_.e2e_request_latency_seconds.Observe(Seconds(t.e2e_ns));
  if (a.first_prefill_ns >= 0) metrics_.queue_time_seconds.Observe(Seconds(t.queued_ns));
  if (c0.n_output > 1) metrics_.time_per_output_token_seconds.Observe(Seconds(t.tpot_ns));
  metrics_.requests_finished.Add(a.finish_reason);
  a.request.sink->OnComplete(usage, t);
  a.completed = true;
}

void Engine::StartDecoding(const Active& a, Choice& c) {
  if (c.sampler != nullptr) return;
  SamplingParams p = a.request.options.sampling;
  p.seed += static_cast<uint64_t>(c.index);
  c.sampler = std::make_unique<Sampler>(p);
  // The output continues the prompt: its leading space is part of the text.
  c.detok = std::make_unique<IncrementalDetokenizer>(tokenizer_, /*strip_leading_space=*/false);
  c.stop = std::make_unique<StopMatcher>(a.request.options.stop);
}

bool RowTakesArgMax(const RequestOptions& o, const Sampler* sampler, int64_t n_output) {
  // Logprobs read the logits, and before min_tokens the ids that would end
  // the choice are masked out of them first. Before its first token a
  // choice has no sampler yet: its parameters decide.
  const bool argmax = sampler != nullptr ? sampler->ReturnsArgMax() : SamplesArgMax(o.sampling);
  return argmax && o.top_logprobs < 0 && n_output >= o.min_tokens;
}

bool Engine::TakesArgMax(const Active& a, const Choice& c) const {
  return RowTakesArgMax(a.request.options, c.sampler.get(), c.n_output);
}

void Engine::TakeArgMax(Active& a, Choice& c, int32_t id, int64_t now) {
  if (c.finished) return;
  StartDecoding(a, c);
  EmitToken(a, c, id, nullptr, now);
}

void Engine::DrawTokens(std::vector<Take>& takes) {
  std::vector<Take*> draws;
  for (Take& t : takes) {
    if (t.argmax || t.c->finished) continue;
    StartDecoding(*t.a, *t.c);
    draws.push_back(&t);
  }
  // A row one draw reads and nothing reads after it (no logprobs) is the
  // sampler's scratch itself: no copy of n_vocab floats. The n choices of
  // a request share their prompt's row, so they copy it.
  std::vector<int32_t> readers;  // Draws from each row.
  for (const Take* t : draws) {
    if (static_cast<size_t>(t->row) >= readers.size()) readers.resize(static_cast<size_t>(t->row) + 1);
    ++readers[static_cast<size_t>(t->row)];
  }
  for (Take* t : draws) {
    t->row_is_scratch = t->a->request.options.top_logprobs < 0 && readers[static_cast<size_t>(t->row)] == 1;
  }
  auto draw = [&](int64_t i) { Draw(*draws[static_cast<size_t>(i)]); };
  const auto n = static_cast<int64_t>(draws.size());
  if (n > 1 && parts_->host_pool.threads() > 1) {
    parts_->host_pool.Run(n, draw);
  } else {
    for (int64_t i = 0; i < n; ++i) draw(i);
  }
}

void Engine::Draw(Take& t) const {
  const Choice& c = *t.c;
  const int64_t n_vocab = model_.config().n_vocab;
  const float* logits = parts_->out.Row(t.row);
  // The sampler truncates its row in place: the row itself when no one
  // else reads it, else a copy (one per thread of the pool).
  thread_local std::vector<float> copy;
  std::span<float> scratch;
  if (t.row_is_scratch) {
    scratch = {parts_->out.MutableRow(t.row), static_cast<size_t>(n_vocab)};
  } else {
    copy.assign(logits, logits + n_vocab);
    scratch = copy;
  }
  const RequestOptions& o = t.a->request.options;
  if (c.n_output < o.min_tokens) {
    // Too early to end: the ids that would end the choice cannot be drawn.
    if (!o.ignore_eos) {
      for (int32_t id : {tokenizer_.eos_id(), tokenizer_.vocab().eot_id}) {
        if (id >= 0 && id < n_vocab) scratch[id] = -INFINITY;
      }
    }
    for (int32_t id : o.stop_token_ids) {
      if (id >= 0 && id < n_vocab) scratch[id] = -INFINITY;
    }
  }
  t.drawn = c.sampler->Sample(scratch, c.tokens);
  if (o.top_logprobs >= 0 && t.drawn != Sampler::kNoToken) {
    // (Never a row used as scratch: the row is read here.)
    t.logprobs = ComputeLogprobs({logits, static_cast<size_t>(n_vocab)}, t.drawn, o.top_logprobs, copy);
  }
}

void Engine::EmitTakes(const std::vector<Take>& takes, int64_t now) {
  for (const Take& t : takes) {
    if (t.c->finished) continue;
    const int32_t id = t.argmax ? parts_->out.argmax[static_cast<size_t>(t.row)] : t.drawn;
    if (id < 0) {  // kNoArgMax, Sampler::kNoToken
      FinishChoice(*t.a, *t.c, FinishReason::kError,
                   "no token can be drawn: every logit is masked or not finite (NaN or infinite logits come from "
                   "a broken model)");
    } else if (t.argmax) {
      TakeArgMax(*t.a, *t.c, id, now);
    } else {
      EmitToken(*t.a, *t.c, id, t.logprobs ? &*t.logprobs : nullptr, now);
    }
  }
}

void Engine::EmitToken(Active& a, Choice& c, int32_t id, const TokenLogprobs* logprobs, int64_t now) {
  const RequestOptions& o = a.request.options;
  a.completion_tokens += 1;
  const bool eog = !o.ignore_eos && tokenizer_.IsEog(id);
  const bool stop_id = std::find(o.stop_token_ids.begin(), o.stop_token_ids.end(), id) != o.stop_token_ids.end();
  TokenEvent ev;
  ev.choice = c.index;
  ev.time_ns = now;
  if (eog || stop_id) {
    // The stop token is not part of the output; release held text first.
    ev.text = c.stop->Push(c.detok->Flush()).emit + c.stop->Flush();
    if (!ev.text.empty()) a.request.sink->OnTokens(ev);
    FinishChoice(a, c, FinishReason::kStop, "");
    return;
  }
  c.tokens.push_back(id);
  c.n_output += 1;
  ev.first_token = c.first_token_ns < 0;
  metrics_.generation_tokens_total.Add();
  if (c.last_token_ns >= 0) metrics_.inter_token_latency_seconds.Observe(Seconds(now - c.last_token_ns));
  if (c.first_token_ns < 0) c.first_token_ns = now;
  if (a.first_token_ns < 0) {
    metrics_.time_to_first_token_seconds.Observe(Seconds(now - a.request.received_ns));
    ObserveFirstToken(a, now);
  }
  c.last_token_ns = now;
  ev.ids.push_back(id);
  if (logprobs != nullptr) {
    ev.chosen.push_back(logprobs->chosen);
    ev.top.push_back(logprobs->top);
  }
  StopMatcher::Result r = c.stop->Push(c.detok->Push(id));
  ev.text = r.emit;
  const bool length = c.n_output >= o.max_tokens ||
                      static_cast<int64_t>(c.tokens.size()) >= context_;
  if (!r.stopped && length) {
    // The last token: an incomplete character's bytes may still complete a
    // stop string.
    const StopMatcher::Result last = c.stop->Push(c.detok->Flush());
    ev.text += last.emit;
    r.stopped = last.stopped;
    if (!last.stopped) ev.text += c.stop->Flush();
  }
  a.request.sink->OnTokens(ev);
  if (r.stopped) {
    FinishChoice(a, c, FinishReason::kStop, "");
  } else if (length) {
    FinishChoice(a, c, FinishReason::kLength, "");
  }
}

}  // namespace swiftlet
