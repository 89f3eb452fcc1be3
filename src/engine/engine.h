// The continuous-batching engine: one thread runs the scheduler loop over a
// paged KV cache; callers on any thread Submit requests and Cancel them.
//
// Each step: admitted cancellations are finished; every decoding sequence
// gets its next token; the rest of the step's token budget goes to prefill
// chunks by class and deadline (engine/scheduler.h); one forward pass;
// sampling, stop rules and the incremental detokenizer; events to the
// request sinks; full blocks committed to the prefix cache. When the cache
// runs out, the lowest-priority, most recently admitted request is
// preempted: its blocks are freed and it is recomputed later (its prompt
// blocks usually come straight back from the prefix cache).
//
// Admission happens in Submit, on the caller's thread, from state the loop
// publishes after every step: a request that cannot meet its TTFT target
// behind the work queued ahead, or would overflow the queue, the prefill
// backlog or the KV cache, is refused at once with a reason and a retry
// estimate.
//
// Embedding requests (RequestOptions::embedding) go through the same
// admission, queue and batches as generation, in a class of their own: the
// rows of their prompts come back as hidden states, pooled as the chunks
// run, and the result is sent when the prompt is done.
//
// Results do not depend on what else is batched (DESIGN.md): every kernel
// is batch invariant and each choice samples with its own seeded RNG.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "core/tensor_type.h"
#include "engine/metrics.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/ttft_estimator.h"

namespace swiftlet {

class Model;      // model/model.h
struct ComputeDevice;  // model/forward_context.h
class StepGate;   // engine/step_gate.h
struct TokenLogprobs;  // engine/logprobs.h
class Tokenizer;  // text/tokenizer.h

struct EngineConfig {
  int threads = 0;                    // 0: physical cores
  uint64_t kv_memory_bytes = 0;       // 0: DefaultKvBytes(the model's device)
  int64_t kv_block_tokens = 16;
  TensorType kv_type = TensorType::kF16;
  int64_t context = 0;                // per sequence; 0: the model's (capped)
  SchedulerConfig scheduler;
  int32_t max_running = 64;           // sequences decoding or prefilling at once
  int64_t max_queue = 1024;           // requests waiting
  int64_t max_queued_tokens = 1 << 18;  // prompt tokens waiting
  int32_t max_n = 16;
  LatencyTargets slo_interactive{500 * kNsPerMs, 100 * kNsPerMs};
  LatencyTargets slo_batch{30 * kNsPerSecond, 0};
  // Embedding requests: ttft is the time to the embedding.
  LatencyTargets slo_embedding{2 * kNsPerSecond, 0};
  bool prefix_cache = true;
  // A prompt refused because it cannot meet its TTFT target even on an
  // idle engine, while part of it is not cached, has that prompt computed
  // once at batch priority (one at a time), so the prefix it shares with
  // the requests after it (a translation instruction, a system prompt) is
  // cached and they fit their target. Without it a cold long prefix would
  // be refused forever: nothing admitted would ever cache it.
  bool warm_refused_prefixes = true;
  // Zero KV blocks as they are freed or taken from the prefix cache.
  bool scrub_kv = false;
  const Clock* clock = nullptr;       // null: SystemClock()
  // Several engines (one per model) on one machine: null, the engine owns a
  // compute pool of `threads` (its CPU forward passes and, on any device,
  // the draws of its sampled rows); else it runs those on the gate's
  // shared pool, one engine's step at a time, most urgent step first
  // (`threads` is then ignored). Must outlive the engine.
  std::shared_ptr<StepGate> step_gate;
  // Called after every forward pass with its token count, before the clock
  // is read again: a test on a FakeClock advances it here by a scripted
  // step cost, so measured costs, estimates and latencies are exact.
  std::function<void(int64_t tokens)> forward_hook_for_testing;
};

// What the loop publishes after each step, for admission and /load.
struct EngineState {
  int64_t waiting = 0;
  int64_t running = 0;
  int64_t running_argmax = 0;  // Of those, requests whose rows are argmax rows.
  int64_t queued_prompt_tokens = 0;              // all classes
  int64_t queued_interactive_prompt_tokens = 0;
  // Prefill the queue will really compute: prompts already matched against
  // the prefix cache count what is left of them, prompts not yet matched
  // count prefill_share of their tokens (the TTFT estimate's input).
  double expected_prefill_tokens = 0;
  double expected_interactive_prefill_tokens = 0;
  double prefill_share = 1.0;  // Moving average of (1 - prefix hit fraction) of new prompts.
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_available = 0;               // free + evictable cached
  StepCostModel cost;                            // measured step costs
  int64_t steps = 0;
  int64_t preemptions = 0;
  int64_t prefix_queries_tokens = 0;
  int64_t prefix_hits_tokens = 0;
  int64_t computed_tokens = 0;                   // fed to Forward, all time
  // When the step running now is predicted to end (engine clock); 0 idle.
  int64_t step_end_ns = 0;
  // How far off the estimate runs: a high quantile (the 97th) of measured
  // over estimated TTFT of recent interactive requests whose planned TTFT
  // was at least a quarter of their target, at least 1 (at most 4). Admission plans with the estimate
  // times this, so time the step costs do not see (other threads on the
  // same cores, the server's own work) is planned for too.
  double ttft_error_factor = 1.0;
  // Every request the loop holds, as the TTFT estimator sees it
  // (engine/ttft_estimator.h), after the last step.
  std::vector<QueuedRequest> requests;
};

class Engine final : public RequestQueue {
 public:
  // The model and tokenizer must outlive the engine.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const Model& model,
                                                        const Tokenizer& tokenizer,
                                                        const EngineConfig& config);
  ~Engine() override;

  // Measures the step cost model with two forward passes (a prefill chunk
  // and a single token) on a scratch sequence, so admission has figures
  // before the first real step. Start calls it; tests that step by hand
  // call it themselves. Not while the engine thread runs.
  void Calibrate();
  // Starts the engine thread (after Calibrate).
  void Start();
  // Stops accepting, cancels what is left, joins the thread.
  void Stop();

  SubmitResult Submit(Request request) override;
  void Cancel(uint64_t id) override;
  // Empties the prefix cache at the next step (blocks in use stay with
  // their requests). Thread-safe.
  void ClearPrefixCache();

  EngineState state() const;
  // Time to first token the loop's measured step costs predict for a new
  // request of `prompt_tokens` and one output token behind the work held
  // now, by the simulation admission runs (engine/ttft_estimator.h), times
  // EngineState::ttft_error_factor as admission plans it; /load reports it. 0 before the first measurement; at most 60 s. Thread-safe.
  int64_t EstimateTtftNs(int64_t prompt_tokens, LatencyClass latency_class) const;
  // Histograms and counters for /metrics; thread-safe to read.
  const EngineMetrics& metrics() const { return metrics_; }
  const EngineConfig& config() const { return config_; }
  int64_t context() const { return context_; }
  // Bytes the KV cache holds (its blocks, all allocated at creation).
  uint64_t KvBytes() const;
  // What EngineConfig::kv_memory_bytes = 0 means on this machine for a
  // model on `device`: a share of free RAM (kv/kv_memory.h), or on the GPU
  // what is free there now, less `weights_to_load` bytes still to come
  // (models not loaded yet), less a reserve; the floor if it cannot be
  // read.
  static uint64_t DefaultKvBytes(ComputeDevice device, uint64_t weights_to_load = 0);

  // Runs one step on the calling thread (for tests, with Start() not
  // called). Returns false when no forward pass ran.
  bool StepForTesting();
  // Blocks available in the cache now (tests check that all come back).
  int64_t KvBlocksAvailableForTesting() const;
  int64_t KvBlocksTotalForTesting() const;

 private:
  // Defined in engine/engine_internal.h.
  struct Active;
  struct Choice;
  struct Parts;
  struct Take;

  Engine(const Model& model, const Tokenizer& tokenizer, const EngineConfig& config,
         std::unique_ptr<Parts> parts, int64_t context);

  void Loop();
  bool Step();
  void TakeIncoming();
  void ApplyCancellations();
  bool EnsureSequences(Active& a);
  bool Reserve(Choice& c, int64_t new_length, const Active& owner, bool for_decode);
  bool PreemptVictim(const Active& owner, bool for_decode);
  void Preempt(Active& a);
  // Frees a request's sequences (it waits again) without counting a
  // preemption.
  void Unstart(Active& a);
  int64_t RunningSequences() const;
  // A choice's sampler, detokenizer and stop matcher, made before its
  // first token.
  void StartDecoding(const Active& a, Choice& c);
  // Whether the choice's next token is its logits' argmax and nothing else
  // reads them: its row goes in Batch::argmax_rows, and TakeArgMax takes
  // the id instead of one drawn from the logits.
  bool TakesArgMax(const Active& a, const Choice& c) const;
  // Draws the id of every take from a logits row (and its logprobs), on
  // the host's pool: each choice has its own sampler, and the draw reads
  // nothing else that changes, so the rows' ids are those of drawing them
  // one by one.
  void DrawTokens(std::vector<Take>& takes);
  // One take's draw from its row: Take::drawn (Sampler::kNoToken when none
  // can be) and Take::logprobs.
  void Draw(Take& t) const;
  // The step's tokens, in order: an argmax id, or a drawn one (a choice
  // that could draw none ends with an error).
  void EmitTakes(const std::vector<Take>& takes, int64_t now);
  void TakeArgMax(Active& a, Choice& c, int32_t id, int64_t now);
  // `logprobs`: null when the request asks for none.
  void EmitToken(Active& a, Choice& c, int32_t id, const TokenLogprobs* logprobs, int64_t now);
  void FinishChoice(Active& a, Choice& c, FinishReason reason, const std::string& message);
  void CompleteIfDone(Active& a);
  void ForkBranches(Active& a, int64_t now);
  // An embedding request's prompt is in: its result goes to the sink.
  void FinishEmbedding(Active& a, Choice& c, int64_t now);
  // The request's first token (or embedding) came at `now`: updates
  // EngineState::ttft_error_factor.
  void ObserveFirstToken(Active& a, int64_t now);
  // After a step: the forward pass took step_ns for step_tokens tokens, the
  // rest of the step around_ns for `outputs` rows that produced a token.
  void Publish(double step_ns, int64_t step_tokens, double around_ns, OutputRows outputs);
  absl::Status Validate(const Request& r) const;
  SubmitResult Admit(Request& request);
  // The estimator's view of an admitted request, and of one not taken by
  // the loop yet (both require mu_), and the whole snapshot.
  QueuedRequest Describe(const Active& a) const;
  // `cached_tokens`: what the prefix cache held of its prompt at admission.
  QueuedRequest DescribeNew(const Request& r, const LatencyTargets& targets, int64_t cached_tokens) const;
  // After `request` was refused for its TTFT target: starts computing its
  // prompt at batch priority when the refusal is about the prompt's own
  // length (EngineConfig::warm_refused_prefixes); true when it did, and
  // then `retry_ns` is when the prefix should be cached.
  bool WarmRefusedPrefix(const Request& request, const EngineSnapshot& snapshot,
                         const QueuedRequest& candidate, int64_t left, int64_t horizon,
                         int64_t cached_tokens, int64_t* retry_ns);
  EngineSnapshot SnapshotLocked() const;
  LatencyTargets TargetsFor(const RequestOptions& o) const;

  const Model& model_;
  const Tokenizer& tokenizer_;
  EngineConfig config_;
  const Clock& clock_;
  std::unique_ptr<Parts> parts_;  // Engine thread (and Start, Stop).
  int64_t context_ = 0;
  EngineMetrics metrics_;

  // Engine-thread state.
  std::vector<std::unique_ptr<Active>> active_;  // admission order
  int64_t next_order_ = 0;

  // Shared with callers.
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Active>> incoming_;
  std::unordered_set<uint64_t> cancelled_;
  EngineState state_;
  uint64_t next_id_ = 1;
  bool accepting_ = true;
  bool clear_prefix_cache_ = false;
  // A prefix warm-up is running (WarmRefusedPrefix); its sink clears it.
  std::shared_ptr<std::atomic<bool>> warmup_in_flight_ = std::make_shared<std::atomic<bool>>(false);
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace swiftlet
