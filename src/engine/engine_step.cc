// One scheduler step on the engine thread: plan, reserve KV (preempting
// when the cache is full), build the batch, run the forward pass, hand the
// output rows to emission.
#include <algorithm>

#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "model/model.h"

namespace swiftlet {

// Victims in order: batch before interactive, most recently admitted first.
bool Engine::PreemptVictim(const Active* keep) {
  Active* victim = nullptr;
  for (auto& p : active_) {
    Active* a = p.get();
    if (a == keep || a->completed || !a->HasSequences()) continue;
    if (victim == nullptr) {
      victim = a;
      continue;
    }
    const bool a_batch = a->request.options.latency_class == LatencyClass::kBatch;
    const bool v_batch = victim->request.options.latency_class == LatencyClass::kBatch;
    if (a_batch != v_batch ? a_batch : a->order > victim->order) victim = a;
  }
  if (victim == nullptr) return false;
  Preempt(*victim);
  return true;
}

void Engine::Preempt(Active& a) {
  for (Choice& c : a.choices) {
    if (c.seq >= 0) (void)parts_->kv.Free(c.seq);
    c.seq = -1;
    c.computed = 0;
    c.feed = 0;
  }
  metrics_.preemptions_total.Add();
  std::lock_guard<std::mutex> lock(mu_);
  state_.preemptions += 1;
}

// Creates the KV sequences of a waiting (or preempted) request's choices and
// attaches what the prefix cache holds of their tokens.
bool Engine::EnsureSequences(Active& a) {
  for (Choice& c : a.choices) {
    if (c.finished || c.seq >= 0) continue;
    auto seq = parts_->kv.CreateSequence();
    if (!seq.ok()) return false;
    c.seq = *seq;
    c.computed = 0;
    if (config_.prefix_cache) {
      auto matched = parts_->kv.MatchPrefix(c.seq, c.tokens, static_cast<int64_t>(c.tokens.size()) - 1);
      if (matched.ok()) {
        c.computed = *matched;
        if (!a.prompt_done) a.cached_tokens = std::max(a.cached_tokens, *matched);
        metrics_.prefix_cache_queries_tokens.Add(static_cast<uint64_t>(c.tokens.size() - 1));
        metrics_.prefix_cache_hits_tokens.Add(static_cast<uint64_t>(*matched));
        std::lock_guard<std::mutex> lock(mu_);
        state_.prefix_queries_tokens += static_cast<int64_t>(c.tokens.size()) - 1;
        state_.prefix_hits_tokens += *matched;
        if (c.tokens.size() > 1) {
          const double share = 1.0 - static_cast<double>(*matched) / static_cast<double>(c.tokens.size() - 1);
          state_.prefill_share += 0.1 * (share - state_.prefill_share);
        }
      }
    }
  }
  return true;
}

bool Engine::Reserve(Choice& c, int64_t new_length, const Active& owner) {
  while (true) {
    if (parts_->kv.Reserve(c.seq, new_length).ok()) return true;
    if (!PreemptVictim(&owner)) return false;
  }
}

bool Engine::Step() {
  const int64_t step_begin = clock_.NowNs();
  TakeIncoming();
  ApplyCancellations();
  if (active_.empty()) {
    Publish(0, 0, 0, 0);
    return false;
  }
  // Demands per unfinished choice, in admission order.
  struct Slot {
    Active* a;
    Choice* c;
  };
  std::vector<Slot> slots;
  std::vector<SequenceDemand> demands;
  int64_t running = 0;
  for (auto& p : active_) {
    for (Choice& c : p->choices) {
      if (c.finished) continue;
      if (c.seq >= 0) ++running;
      SequenceDemand d;
      const int64_t pending = static_cast<int64_t>(c.tokens.size()) - c.computed;
      d.decoding = c.seq >= 0 && p->prompt_done && pending == 1;
      d.pending_tokens = pending;
      d.latency_class = p->request.options.latency_class;
      d.ttft_deadline_ns = p->ttft_deadline_ns;
      d.arrival_order = p->order;
      d.tpot_target_ns = p->targets.tpot_ns;
      slots.push_back({p.get(), &c});
      demands.push_back(d);
    }
  }
  StepCostModel cost;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cost = state_.cost;
  }
  const StepPlan plan = PlanStep(demands, config_.scheduler, cost);

  // Reserve KV for every planned feed, decodes first (the plan lists them
  // in admission order), creating sequences for requests that start now.
  for (size_t i = 0; i < slots.size(); ++i) slots[i].c->feed = 0;
  auto reserve_all = [&](bool decodes) {
    for (size_t i = 0; i < slots.size(); ++i) {
      if (plan.tokens[i] == 0 || demands[i].decoding != decodes) continue;
      Active& a = *slots[i].a;
      Choice& c = *slots[i].c;
      if (c.finished || a.cancelled) continue;
      if (c.seq < 0) {
        if (running >= config_.max_running) continue;
        if (!EnsureSequences(a)) continue;
        for (const Choice& x : a.choices) running += x.seq >= 0 && &x != &c;
        ++running;
      }
      const int64_t want = std::min<int64_t>(plan.tokens[i], static_cast<int64_t>(c.tokens.size()) - c.computed);
      if (want <= 0) continue;
      if (!Reserve(c, c.computed + want, a)) {
        // Nothing left to preempt: a decode preempts its own request and
        // retries later; a prefill simply waits.
        if (decodes) Preempt(a);
        continue;
      }
      c.feed = want;
      if (a.first_prefill_ns < 0) a.first_prefill_ns = clock_.NowNs();
    }
  };
  reserve_all(true);
  reserve_all(false);

  // The batch: each fed choice's next tokens; the last position of a
  // choice's known tokens wants logits.
  Batch& batch = parts_->batch;
  batch = Batch();
  struct Output {
    Active* a;
    Choice* c;
  };
  std::vector<Output> outputs;
  for (Slot& s : slots) {
    Choice& c = *s.c;
    if (c.feed == 0 || c.seq < 0) continue;
    for (int64_t j = 0; j < c.feed; ++j) {
      const int64_t pos = c.computed + j;
      const bool last = pos == static_cast<int64_t>(c.tokens.size()) - 1;
      batch.Add(c.tokens[pos], static_cast<int32_t>(pos), c.seq, last);
      if (last) outputs.push_back({s.a, &c});
    }
  }
  if (batch.size() == 0) {
    Publish(0, 0, 0, 0);
    std::erase_if(active_, [](const std::unique_ptr<Active>& a) { return a->completed; });
    return false;
  }
  const int64_t t0 = clock_.NowNs();
  const absl::Status st = model_.Forward(batch, parts_->kv, parts_->fwd, parts_->out);
  const int64_t now = clock_.NowNs();
  if (!st.ok()) {
    // A bug or a bad request that slipped through: fail what was in the step.
    for (Slot& s : slots) {
      if (s.c->feed > 0 && !s.c->finished) FinishChoice(*s.a, *s.c, FinishReason::kError, std::string(st.message()));
    }
    for (auto& a : active_) {
      if (!a->prompt_done && a->choices.front().finished) a->prompt_done = true;
      CompleteIfDone(*a);
    }
  } else {
    for (Slot& s : slots) {
      Choice& c = *s.c;
      if (c.feed == 0) continue;
      c.computed += c.feed;
      c.feed = 0;
      if (config_.prefix_cache) (void)parts_->kv.Commit(c.seq, c.tokens);
    }
    for (size_t r = 0; r < outputs.size(); ++r) {
      Active& a = *outputs[r].a;
      Choice& c = *outputs[r].c;
      const float* logits = parts_->out.Row(static_cast<int64_t>(r));
      if (!a.prompt_done) {
        // The prompt is in: fork the other choices off it; all sample from
        // this row.
        a.prompt_done = true;
        a.prompt_done_ns = now;
        metrics_.prompt_tokens_total.Add(a.request.prompt.size());
        const int32_t n = a.request.options.n;
        for (int32_t i = 1; i < n; ++i) {
          Choice f;
          f.index = i;
          f.tokens = c.tokens;
          f.computed = c.computed;
          auto seq = parts_->kv.Fork(c.seq);
          if (seq.ok()) {
            f.seq = *seq;
          } else {
            f.computed = 0;  // recomputed when a sequence frees up
          }
          a.choices.push_back(std::move(f));
        }
        for (Choice& x : a.choices) Sample(a, x, logits, now);
      } else {
        Sample(a, c, logits, now);
      }
    }
  }
  for (auto& a : active_) CompleteIfDone(*a);
  std::erase_if(active_, [](const std::unique_ptr<Active>& a) { return a->completed; });
  const int64_t step_end = clock_.NowNs();
  Publish(static_cast<double>(now - t0), batch.size(),
          static_cast<double>((t0 - step_begin) + (step_end - now)), static_cast<int64_t>(outputs.size()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_.computed_tokens += batch.size();
    state_.steps += 1;
  }
  return true;
}

}  // namespace swiftlet
