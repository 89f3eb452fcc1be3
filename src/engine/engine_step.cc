// One scheduler step on the engine thread: plan, reserve KV (preempting
// when the cache is full), build the batch, run the forward pass, hand the
// output rows to emission.
#include <algorithm>
#include <climits>

#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "engine/step_gate.h"
#include "model/model.h"

namespace swiftlet {

namespace {

// Lower is more important.
int ClassRank(const Request& r) { return LatencyClassRank(r.options.latency_class); }

}  // namespace

// Preemption by class, then deadline (DESIGN.md): a victim is never of a
// higher class than the request that needs the room. A prefill takes room
// only from a lower class; a decode also from its own class, from the
// request with the latest TTFT deadline after its own (then the most
// recently admitted). Among those, the lowest class and latest deadline go
// first. Their blocks go back and they are recomputed later (their prompt
// blocks usually come straight back from the prefix cache).
bool Engine::PreemptVictim(const Active& owner, bool for_decode) {
  const int owner_rank = ClassRank(owner.request);
  auto later = [](const Active& x, const Active& y) {
    return x.ttft_deadline_ns != y.ttft_deadline_ns ? x.ttft_deadline_ns > y.ttft_deadline_ns
                                                    : x.order > y.order;
  };
  Active* victim = nullptr;
  for (auto& p : active_) {
    Active* a = p.get();
    if (a == &owner || a->completed || !a->HasSequences()) continue;
    const int rank = ClassRank(a->request);
    const bool eligible = rank > owner_rank || (for_decode && rank == owner_rank && later(*a, owner));
    if (!eligible) continue;
    if (victim == nullptr || rank > ClassRank(victim->request) ||
        (rank == ClassRank(victim->request) && later(*a, *victim))) {
      victim = a;
    }
  }
  if (victim == nullptr) return false;
  Preempt(*victim);
  return true;
}

void Engine::Unstart(Active& a) {
  for (Choice& c : a.choices) {
    if (c.seq >= 0) (void)parts_->kv.Free(c.seq);
    c.seq = -1;
    c.computed = 0;
    c.feed = 0;
  }
  // Its rows are computed again from the start.
  if (a.pooled != nullptr) a.pooled = std::make_unique<PooledSum>(model_.config().n_embd);
}

void Engine::Preempt(Active& a) {
  Unstart(a);
  metrics_.preemptions_total.Add();
  std::lock_guard<std::mutex> lock(mu_);
  state_.preemptions += 1;
}

// Creates the KV sequences of a waiting (or preempted) request's choices and
// attaches what the prefix cache holds of their tokens.
bool Engine::EnsureSequences(Active& a) {
  for (Choice& c : a.choices) {
    if (c.finished || c.seq >= 0) continue;
    auto seq = parts_->kv.CreateSequence(a.request.cache_scope);
    if (!seq.ok()) return false;
    c.seq = *seq;
    c.computed = 0;
    // An embedding needs the hidden state of every row it pools: none may
    // come from the cache.
    if (config_.prefix_cache && !a.request.options.embedding) {
      auto matched = parts_->kv.MatchPrefix(c.seq, c.tokens, static_cast<int64_t>(c.tokens.size()) - 1);
      if (matched.ok()) {
        c.computed = *matched;
        if (!a.prompt_done) a.cached_tokens = std::max(a.cached_tokens, *matched);
        metrics_.prefix_cache_queries_tokens.Add(static_cast<uint64_t>(c.tokens.size() - 1));
        metrics_.prefix_cache_hits_tokens.Add(static_cast<uint64_t>(*matched));
        metrics_.prompt_tokens_cached_total.Add(static_cast<uint64_t>(std::min<int64_t>(*matched, c.tokens.size() - c.n_output)));
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

bool Engine::Reserve(Choice& c, int64_t new_length, const Active& owner, bool for_decode) {
  while (true) {
    if (parts_->kv.Reserve(c.seq, new_length).ok()) return true;
    if (!PreemptVictim(owner, for_decode)) return false;
  }
}

int64_t Engine::RunningSequences() const {
  int64_t running = 0;
  for (const auto& p : active_) {
    for (const Choice& c : p->choices) running += c.seq >= 0;
  }
  return running;
}

// The shared part of a group is in: every branch forks from its last
// position (the partial block is copied when a branch writes on) and
// computes its own tokens from the next step; their last tokens give the
// choices' first tokens.
void Engine::ForkBranches(Active& a, int64_t now) {
  a.prompt_done = true;
  a.prompt_done_ns = now;
  int64_t prompt = static_cast<int64_t>(a.request.prompt.size());
  for (const auto& b : a.request.branches) prompt += static_cast<int64_t>(b.size());
  metrics_.prompt_tokens_total.Add(static_cast<uint64_t>(prompt));
  Choice& first = a.choices.front();
  // The branches after the first take the shared part from it.
  metrics_.prompt_tokens_cached_total.Add(static_cast<uint64_t>(first.computed) * (a.request.branches.size() - 1));
  for (size_t i = 1; i < a.request.branches.size(); ++i) {
    Choice f;
    f.index = static_cast<int32_t>(i);
    f.tokens = first.tokens;
    f.tokens.insert(f.tokens.end(), a.request.branches[i].begin(), a.request.branches[i].end());
    f.computed = first.computed;
    auto seq = parts_->kv.Fork(first.seq);
    if (seq.ok()) {
      f.seq = *seq;
    } else {
      f.computed = 0;  // Computed whole when a sequence frees up.
    }
    a.choices.push_back(std::move(f));
  }
  first.tokens.insert(first.tokens.end(), a.request.branches[0].begin(), a.request.branches[0].end());
}

bool Engine::Step() {
  const int64_t step_begin = clock_.NowNs();
  TakeIncoming();
  ApplyCancellations();
  if (active_.empty()) {
    Publish(0, 0, 0, {});
    return false;
  }
  for (auto& p : active_) {
    for (Choice& c : p->choices) c.feed = 0;
  }
  // Decodes first, in admission order: each decoding sequence gets its
  // token, taking blocks from lower classes (or later deadlines) when the
  // cache is full; with nothing to take, the request preempts itself and
  // is recomputed later.
  for (auto& p : active_) {
    Active& a = *p;
    if (a.cancelled || !a.prompt_done) continue;
    for (Choice& c : a.choices) {
      if (c.finished || c.seq < 0 || static_cast<int64_t>(c.tokens.size()) - c.computed != 1) continue;
      if (!Reserve(c, c.computed + 1, a, /*for_decode=*/true)) {
        Preempt(a);
        break;
      }
      c.feed = 1;
    }
  }

  // Demands per unfinished choice, in admission order.
  struct Slot {
    Active* a;
    Choice* c;
  };
  std::vector<Slot> slots;
  std::vector<SequenceDemand> demands;
  for (auto& p : active_) {
    if (p->cancelled) continue;
    for (Choice& c : p->choices) {
      if (c.finished) continue;
      SequenceDemand d;
      d.decoding = c.feed == 1 && c.seq >= 0 && p->prompt_done;
      d.pending_tokens = static_cast<int64_t>(c.tokens.size()) - c.computed;
      d.latency_class = p->request.options.latency_class;
      d.ttft_deadline_ns = p->ttft_deadline_ns;
      d.arrival_order = p->order;
      d.tpot_target_ns = p->targets.tpot_ns;
      d.argmax = d.decoding && TakesArgMax(*p, c);
      slots.push_back({p.get(), &c});
      demands.push_back(d);
    }
  }
  StepCostModel cost;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cost = state_.cost;
  }
  // Prefill in the scheduler's order; a request that cannot start (no slot
  // of max_running, no blocks) passes its share of the budget on.
  int64_t running = RunningSequences();
  auto feed = [&](size_t i, int64_t tokens) -> int64_t {
    Active& a = *slots[i].a;
    Choice& c = *slots[i].c;
    bool started_now = false;
    if (c.seq < 0) {
      if (running >= config_.max_running) return 0;
      if (!EnsureSequences(a)) {
        Unstart(a);
        running = RunningSequences();
        return 0;
      }
      started_now = true;
      running = RunningSequences();
    }
    const int64_t want = std::min<int64_t>(tokens, static_cast<int64_t>(c.tokens.size()) - c.computed);
    if (want <= 0) return 0;
    if (!Reserve(c, c.computed + want, a, /*for_decode=*/false)) {
      if (started_now) {
        // Back to waiting, so it holds no slot it cannot use.
        Unstart(a);
        running = RunningSequences();
      }
      return 0;
    }
    c.feed = want;
    if (a.first_prefill_ns < 0) a.first_prefill_ns = clock_.NowNs();
    return want;
  };
  (void)PlanStep(demands, config_.scheduler, cost, feed);

  // The batch: each fed choice's next tokens; the last position of a
  // choice's known tokens wants logits, or only their argmax.
  Batch& batch = parts_->batch;
  batch = Batch();
  struct Output {
    Active* a;
    Choice* c;
    bool argmax;  // Its result is out.argmax[row], else out.Row(row).
    int64_t row;
  };
  std::vector<Output> outputs;
  OutputRows output_rows;
  std::vector<Active*> pooled_rows;  // The owner of each hidden row.
  int64_t prompt_positions = 0;
  for (Slot& s : slots) {
    Choice& c = *s.c;
    if (c.feed == 0 || c.seq < 0) continue;
    const int64_t n_tokens = static_cast<int64_t>(c.tokens.size());
    const RequestOptions& o = s.a->request.options;
    // Positions before the choice's first output (a branch's own prompt
    // included; not yet forked, its branch is not in `tokens`).
    const int64_t prompt_length = n_tokens - c.n_output;
    prompt_positions += std::max<int64_t>(0, std::min(c.computed + c.feed, prompt_length) - c.computed);
    for (int64_t j = 0; j < c.feed; ++j) {
      const int64_t pos = c.computed + j;
      if (o.embedding) {
        const bool hidden = PoolingWants(o.pooling, pos, n_tokens);
        batch.Add(c.tokens[pos], static_cast<int32_t>(pos), c.seq, /*output=*/false, hidden);
        if (hidden) pooled_rows.push_back(s.a);
        continue;
      }
      // A group's shared part wants no logits: its branches follow.
      const bool last = pos == n_tokens - 1 && !(s.a->HasBranches() && !s.a->prompt_done);
      const bool argmax = last && TakesArgMax(*s.a, c);
      batch.Add(c.tokens[pos], static_cast<int32_t>(pos), c.seq, last && !argmax);
      if (argmax) batch.argmax_rows.push_back(static_cast<int32_t>(batch.size() - 1));
      if (last) {
        const std::vector<int32_t>& rows = argmax ? batch.argmax_rows : batch.output_rows;
        outputs.push_back({s.a, &c, argmax, static_cast<int64_t>(rows.size()) - 1});
        output_rows.Add(argmax);
      }
    }
  }
  if (batch.size() == 0) {
    Publish(0, 0, 0, {});
    std::erase_if(active_, [](const std::unique_ptr<Active>& a) { return a->completed; });
    return false;
  }
  metrics_.prompt_tokens_computed_total.Add(static_cast<uint64_t>(prompt_positions));
  StepGate::Turn turn;
  if (config_.step_gate != nullptr) {
    // Another model's engine may hold the shared pool: wait for a turn by
    // the latest time this step can start and still meet its most urgent
    // target (a decode's next token is due a TPOT after its last, a
    // prefill's first token at its TTFT deadline). The wait is not the
    // step's cost.
    const int64_t step_ns = static_cast<int64_t>(cost.PredictNs(batch.size(), output_rows));
    const int64_t before = clock_.NowNs();
    int rank = LatencyClassRank(LatencyClass::kBatch);
    int64_t deadline = INT64_MAX;
    for (const Slot& s : slots) {
      if (s.c->feed == 0) continue;
      const Active& a = *s.a;
      int64_t due = a.ttft_deadline_ns;
      if (a.prompt_done) {
        const int64_t tpot = a.targets.tpot_ns > 0 ? a.targets.tpot_ns : kNsPerSecond;
        due = (s.c->last_token_ns >= 0 ? s.c->last_token_ns : before) + tpot;
      }
      const int r = ClassRank(a.request);
      if (due < deadline || (due == deadline && r < rank)) {
        deadline = due;
        rank = r;
      }
    }
    turn = config_.step_gate->Acquire(rank, deadline == INT64_MAX ? deadline : deadline - step_ns);
  }
  const int64_t t0 = clock_.NowNs();
  {
    // A request admitted while this step runs joins the next one: the
    // estimate starts its simulation when this step is predicted to end.
    std::lock_guard<std::mutex> lock(mu_);
    state_.step_end_ns = t0 + static_cast<int64_t>(cost.PredictNs(batch.size(), output_rows));
  }
  const absl::Status st = model_.Forward(batch, parts_->kv, parts_->fwd, parts_->out);
  if (config_.forward_hook_for_testing) config_.forward_hook_for_testing(batch.size());
  const int64_t now = clock_.NowNs();
  std::vector<Take> takes;  // The tokens the step's outputs give, in order.
  if (!st.ok()) {
    // A bug or a bad request that slipped through: fail what was in the step.
    turn = StepGate::Turn();  // Nothing to draw.
    for (Slot& s : slots) {
      if (s.c->feed > 0 && !s.c->finished) FinishChoice(*s.a, *s.c, FinishReason::kError, std::string(st.message()));
    }
    for (auto& a : active_) {
      if (!a->prompt_done && a->choices.front().finished) a->prompt_done = true;
      CompleteIfDone(*a);
    }
  } else {
    for (size_t r = 0; r < pooled_rows.size(); ++r) {
      pooled_rows[r]->pooled->Add(parts_->out.HiddenRow(static_cast<int64_t>(r)));
    }
    for (Slot& s : slots) {
      Choice& c = *s.c;
      if (c.feed == 0) continue;
      c.computed += c.feed;
      c.feed = 0;
      if (config_.prefix_cache) (void)parts_->kv.Commit(c.seq, c.tokens);
      if (s.a->request.options.embedding && c.computed == static_cast<int64_t>(c.tokens.size())) {
        FinishEmbedding(*s.a, c, now);
      }
      if (s.a->HasBranches() && !s.a->prompt_done && c.computed == static_cast<int64_t>(c.tokens.size())) {
        ForkBranches(*s.a, now);
      }
    }
    for (const Output& o : outputs) {
      Active& a = *o.a;
      Choice& c = *o.c;
      if (!a.prompt_done) {
        // The prompt is in: fork the other choices off it; all take a token
        // from this row.
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
        for (Choice& x : a.choices) takes.push_back({&a, &x, o.argmax, o.row, 0, false, {}});
      } else {
        takes.push_back({&a, &c, o.argmax, o.row, 0, false, {}});
      }
    }
    DrawTokens(takes);
  }
  // Given back once the rows are drawn (on the shared pool the turn
  // holds), before the tokens are emitted. (The bookkeeping above, which
  // the draws need first, runs under it too: a few µs, and the sinks of
  // embeddings that finished.)
  turn = StepGate::Turn();
  EmitTakes(takes, now);
  for (auto& a : active_) CompleteIfDone(*a);
  std::erase_if(active_, [](const std::unique_ptr<Active>& a) { return a->completed; });
  const int64_t step_end = clock_.NowNs();
  Publish(static_cast<double>(now - t0), batch.size(),
          static_cast<double>((t0 - step_begin) + (step_end - now)), output_rows);
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_.computed_tokens += batch.size();
    state_.steps += 1;
  }
  return true;
}

}  // namespace swiftlet
