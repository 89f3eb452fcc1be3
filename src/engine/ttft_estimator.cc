#include "engine/ttft_estimator.h"

#include <algorithm>

namespace swiftlet {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Sim {
  QueuedRequest q;
  bool candidate = false;
  int64_t prompt_left = 0;     // Prefill still to run.
  int64_t cached = 0;          // Positions its first sequence has in the cache.
  int64_t held = 0;            // All its blocks.
  int64_t generated = 0;       // Tokens per sequence since it last started decoding.
  bool decoding_now = false;   // Fed its decode token this step.
  bool finished = false;
};

}  // namespace

TtftEstimate EstimateTtft(const EngineSnapshot& snap, const QueuedRequest& candidate,
                          int64_t horizon_ns) {
  TtftEstimate est;
  const StepCostModel& cost = snap.cost;
  const EstimatorLimits& lim = snap.limits;
  if (cost.per_token_ns <= 0) return est;
  const int64_t block = std::max<int64_t>(1, lim.kv_block_tokens);

  std::vector<Sim> sims;
  sims.reserve(snap.requests.size() + 1);
  int64_t running = 0;  // Sequences holding KV.
  for (const QueuedRequest& q : snap.requests) {
    Sim s;
    s.q = q;
    s.prompt_left = q.prompt_done ? 0 : std::max<int64_t>(0, q.prefill_tokens);
    s.held = q.kv_blocks;
    s.cached = q.started ? q.cached_tokens : 0;
    if (q.started) running += q.prompt_done ? q.n : 1;
    sims.push_back(s);
  }
  {
    Sim s;
    s.q = candidate;
    s.q.started = false;
    s.q.prompt_done = false;
    s.candidate = true;
    s.prompt_left = std::max<int64_t>(1, candidate.prefill_tokens);
    sims.push_back(s);
  }
  // The prefill order never changes: class, deadline, arrival (decoding
  // requests are in it too: a preempted one prefills again).
  std::vector<size_t> order(sims.size());
  for (size_t i = 0; i < sims.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const QueuedRequest& x = sims[a].q;
    const QueuedRequest& y = sims[b].q;
    if (x.latency_class != y.latency_class) return LatencyClassRank(x.latency_class) < LatencyClassRank(y.latency_class);
    if (x.ttft_deadline_ns != y.ttft_deadline_ns) return x.ttft_deadline_ns < y.ttft_deadline_ns;
    return sims[a].candidate ? false : sims[b].candidate ? true : x.order < y.order;
  });

  int64_t free_blocks = lim.kv_blocks_available;
  int64_t now = std::max<int64_t>(0, snap.busy_ns);
  auto rank = [](const Sim& x) { return LatencyClassRank(x.q.latency_class); };
  auto later = [](const Sim& x, const Sim& y) {
    return x.q.ttft_deadline_ns != y.q.ttft_deadline_ns ? x.q.ttft_deadline_ns > y.q.ttft_deadline_ns
                                                        : x.q.order > y.q.order;
  };
  // A request that loses its blocks waits again and prefills everything
  // it had (the engine recomputes it).
  auto unstart = [&](Sim& v) {
    free_blocks += v.held;
    running -= v.q.prompt_done ? v.q.n : 1;
    v.prompt_left = v.q.prompt_done ? v.cached + 1 : v.q.prompt_tokens;
    v.held = 0;
    v.cached = 0;
    v.q.started = v.q.prompt_done = false;
    v.decoding_now = false;
  };
  // The engine's preemption (engine_step.cc): room for `owner` from a lower
  // class, or for a decode also from its class with a later deadline.
  auto preempt_for = [&](const Sim& owner, bool for_decode, int64_t need) {
    while (free_blocks < need) {
      Sim* victim = nullptr;
      for (Sim& v : sims) {
        if (&v == &owner || v.finished || !v.q.started || v.held == 0) continue;
        const bool eligible = rank(v) > rank(owner) || (for_decode && rank(v) == rank(owner) && later(v, owner));
        if (!eligible) continue;
        if (victim == nullptr || rank(v) > rank(*victim) || (rank(v) == rank(*victim) && later(v, *victim))) {
          victim = &v;
        }
      }
      if (victim == nullptr) return false;
      unstart(*victim);
    }
    return true;
  };
  std::vector<size_t> completing;
  while (now < horizon_ns) {
    // Decodes first, in admission order, as the engine reserves them: a
    // sequence entering a new block takes one, from others when none is
    // free, or gives up its own.
    OutputRows decodes;
    int64_t tightest = 0;
    for (Sim& s : sims) {
      s.decoding_now = false;
      if (s.finished || !s.q.prompt_done || !s.q.started) continue;
      if (CeilDiv(s.cached + 1, block) > CeilDiv(s.cached, block)) {
        const int64_t grow = s.q.n;
        if (free_blocks < grow && !preempt_for(s, /*for_decode=*/true, grow)) {
          unstart(s);
          continue;
        }
        free_blocks -= grow;
        s.held += grow;
      }
      s.decoding_now = true;
    }
    for (const Sim& s : sims) {
      if (!s.decoding_now) continue;
      decodes.Add(s.q.argmax, s.q.n);
      const int64_t t = s.q.tpot_target_ns;
      if (t > 0 && (tightest == 0 || t < tightest)) tightest = t;
    }
    const int64_t budget = StepBudget(lim.step_tokens, tightest, decodes, cost);
    int64_t left = budget - decodes.total();
    completing.clear();
    for (size_t i : order) {
      if (left <= 0) break;
      Sim& s = sims[i];
      if (s.finished || s.q.prompt_done || s.prompt_left <= 0) continue;
      const int64_t take = std::min({s.prompt_left, lim.chunk_tokens, left});
      const int64_t need = CeilDiv(s.cached + take, block) - CeilDiv(s.cached, block);
      if (!s.q.started && running >= lim.max_running) {
        if (s.candidate) est.waited_for_slot = true;
        continue;  // No slot: the budget goes to the next one.
      }
      if (need > free_blocks && !preempt_for(s, /*for_decode=*/false, need)) {
        if (s.candidate) est.waited_for_kv = true;
        continue;
      }
      if (!s.q.started) {
        s.q.started = true;
        running += 1;
      }
      free_blocks -= need;
      s.held += need;
      s.cached += take;
      s.prompt_left -= take;
      left -= take;
      if (s.prompt_left == 0) completing.push_back(i);
    }
    const int64_t tokens = budget - left;
    OutputRows outputs = decodes;
    for (size_t i : completing) outputs.Add(sims[i].q.argmax);
    if (tokens == 0) {
      // Nothing can run (every waiting request lacks a slot or blocks and
      // nothing decodes to free them): the candidate is not reached.
      est.ttft_ns = TtftEstimate::kNever;
      return est;
    }
    const auto step_ns = static_cast<int64_t>(cost.PredictNs(tokens, outputs));
    now += step_ns;
    est.max_step_ns = std::max(est.max_step_ns, step_ns);
    ++est.steps;

    // Decoded tokens land; finished requests give back slots and blocks.
    for (Sim& s : sims) {
      if (!s.decoding_now) continue;
      s.cached += 1;
      s.generated += 1;
      if (s.generated >= s.q.decode_tokens) {
        s.finished = true;
        running -= s.q.n;
        free_blocks += s.held;
      }
    }
    for (size_t i : completing) {
      Sim& s = sims[i];
      if (s.candidate) {
        est.ttft_ns = now;
        return est;
      }
      // The first token came with the prompt; forks take their slots.
      s.q.prompt_done = true;
      running += s.q.n - 1;
      s.q.decode_tokens = std::max<int64_t>(0, s.q.decode_tokens - 1);
      s.generated = 0;
      if (s.q.decode_tokens == 0) {
        s.finished = true;
        running -= s.q.n;
        free_blocks += s.held;
      }
    }
  }
  est.ttft_ns = TtftEstimate::kNever;
  return est;
}

}  // namespace swiftlet
