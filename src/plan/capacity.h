// The planner's formulas, each a pure function of counts: what a model
// holds in memory, what a decode step and a prefill cost on a machine by the
// roofline, and what a serving replica sustains at a batch size. Every one
// is stated with its hand-computable form in docs/PLANNING.md; the planner
// (plan/planner.h) only strings them together.
//
// Units: bytes, seconds, requests per second; bandwidth in 1e9 bytes/s,
// peaks in 1e12 operations/s (a multiply-add is 2).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"
#include "perf/model_shape.h"
#include "perf/roofline.h"

namespace swiftlet::plan {

// ---- Memory ---------------------------------------------------------------

// K and V of one token in every layer: 2 x n_layer x n_head_kv x head_dim
// elements of `kv_type` (f16: 2 bytes, f32: 4, q8_0: 34 bytes per 32).
absl::StatusOr<uint64_t> KvBytesPerToken(const ModelShape& shape, TensorType kv_type);

// The KV cache is paged in blocks of this many tokens (kv/'s default), so a
// sequence holds whole blocks.
inline constexpr int64_t kKvBlockTokens = 16;

// KV held by one sequence of `context` tokens: ceil(context / 16) x 16 x
// kv_bytes_per_token.
uint64_t KvBytesPerSequence(uint64_t kv_bytes_per_token, int64_t context);

// Sequences whose KV fits beside the weights: floor((usable - weights) /
// kv_bytes_per_sequence); 0 when the weights alone do not fit.
int64_t MaxConcurrency(uint64_t usable_bytes, uint64_t weights_bytes,
                       uint64_t kv_bytes_per_sequence);

// ---- Roofline ---------------------------------------------------------------

// What one forward pass moves and computes.
struct Work {
  double bytes = 0;      // Read from (or written to) device memory.
  double int8_ops = 0;   // On quantized weights (int8 activations).
  double float_ops = 0;  // On float weights and attention.
};

// One decode step of `batch` sequences, each attending `mean_context`
// positions: the streamed weights once plus every sequence's KV,
//   bytes     = weight_bytes_per_token + batch x mean_context x kv_bytes_per_token
//   int8_ops  = 2 x int8_macs_per_token x batch
//   float_ops = 2 x (float_macs_per_token + attn_macs_per_position x mean_context) x batch
Work DecodeStepWork(const ModelCost& cost, uint64_t kv_bytes_per_token, int64_t batch,
                    double mean_context);

// The prefill of `tokens` prompt tokens of one sequence: the weights once,
// the KV written once, position i attending i + 1 positions,
//   bytes     = weight_bytes_per_token + tokens x kv_bytes_per_token
//   int8_ops  = 2 x int8_macs_per_token x tokens
//   float_ops = 2 x (float_macs_per_token x tokens
//                    + attn_macs_per_position x tokens x (tokens + 1) / 2)
Work PrefillWork(const ModelCost& cost, uint64_t kv_bytes_per_token, double tokens);

// One replica's limits (a device, or tensor_parallel devices together).
struct MachineRates {
  double bandwidth_gbs = 0;
  double int8_tops = 0;
  double float_tflops = 0;
};

struct RooflineTime {
  double memory_s = 0;   // bytes / bandwidth
  double compute_s = 0;  // int8_ops / int8 peak + float_ops / float peak
  double seconds = 0;    // max(memory_s, compute_s)
  bool compute_bound = false;
};
RooflineTime RooflineSeconds(const Work& work, const MachineRates& machine);

// ---- Efficiency -------------------------------------------------------------

// Achieved / roofline, fitted by calibration (plan/calibration.h) or given;
// 1 everywhere is the bare roofline, an upper bound on speed.
struct Efficiency {
  // (batch, factor) of decode steps, ascending in batch; empty: 1.
  std::vector<std::pair<int64_t, double>> decode;
  double prefill = 1;
  double serving = 1;  // Measured goodput / modelled goodput of a server.

  // Linear in log2(batch) between the points, the end value outside them.
  double DecodeAt(int64_t batch) const;
};

// ---- Serving ----------------------------------------------------------------

// What one request asks of a replica.
struct RequestShape {
  double ttft_prefill_s = 0;     // Prefill before its first token.
  double prefill_share_s = 0;    // Its share of the replica's prefill time.
  int64_t output_tokens = 1;
};

// A replica running `batch` sequences whose decode step takes `step_s`. Of
// each second, lambda x prefill_share_s goes to prefill and the rest to
// decode steps, each of which gives every sequence one token; a request
// takes output_tokens - 1 steps (its first token comes from its prefill):
//   req_s = batch / ((output_tokens - 1) x step_s + batch x prefill_share_s)
//   tpot  = step_s + batch x prefill_share_s / (output_tokens - 1)
//   ttft  = ttft_prefill_s + step_s   (its prefill waits for the step in flight)
//   e2e   = ttft + (output_tokens - 1) x tpot
// With one output token, req_s = 1 / prefill_share_s and tpot = 0.
struct ServingPoint {
  int64_t batch = 0;
  double step_s = 0;
  double req_s = 0;
  double tpot_s = 0;
  double ttft_s = 0;
  double e2e_s = 0;
};
ServingPoint ServeAt(int64_t batch, double step_s, const RequestShape& request);

// Latency targets in seconds; 0: none.
struct SloSeconds {
  double ttft = 0;
  double tpot = 0;
  double e2e = 0;
};
bool MeetsSlo(const ServingPoint& point, const SloSeconds& slo);

// ---- One replica ------------------------------------------------------------

// A model served by one replica on `machine`, and the request it serves:
// the pieces above put together.
struct ReplicaModel {
  ModelCost cost;
  uint64_t kv_bytes_per_token = 0;
  MachineRates machine;
  Efficiency efficiency;
  double prompt_tokens = 1;  // Prefilled before a request's first token.
  // Requests that share one prefill (a live comment's K languages fork from
  // one prompt): each pays prefill / prefill_sharing of the replica's time.
  double prefill_sharing = 1;
  int64_t output_tokens = 1;
};

// The mean context a decode step attends: prompt_tokens + output_tokens / 2.
double MeanDecodeContext(const ReplicaModel& m);
// The decode step at `batch`, by the roofline alone.
RooflineTime DecodeRoofline(const ReplicaModel& m, int64_t batch);
// The prompt's prefill, by the roofline alone.
RooflineTime PrefillRoofline(const ReplicaModel& m);
// ServeAt with step_s = roofline / efficiency.DecodeAt(batch), ttft_prefill_s
// = prefill roofline / efficiency.prefill, prefill_share_s = ttft_prefill_s
// / prefill_sharing. The serving factor is not applied here.
ServingPoint EvaluateReplica(const ReplicaModel& m, int64_t batch);
// The largest batch in 1..limit whose point meets `slo`; 0 when none does.
int64_t LargestSloBatch(const ReplicaModel& m, const SloSeconds& slo, int64_t limit);

// ---- Fleet ------------------------------------------------------------------

enum class RedundancyRule { kNone, kSpares, kDouble };
struct Redundancy {
  RedundancyRule rule = RedundancyRule::kNone;
  int64_t spares = 0;  // kSpares: "n+spares".
};

// Replicas for `demand_req_s` at `replica_req_s` each: n = ceil(demand /
// replica) (at least 1 when there is demand), then n + spares ("n+k") or
// 2n ("2n").
int64_t ReplicasFor(double demand_req_s, double replica_req_s, const Redundancy& redundancy);

// Shipping `bytes` over a link of `mbps` (1e6 bits/s): GB x 8000 / Mbps,
// GB = 1e9 bytes.
double TransferSeconds(uint64_t bytes, double mbps);

// Fleet cost per 1,000 tokens served at `tokens_per_s`.
double CostPer1kTokens(double cost_per_hour, double tokens_per_s);

}  // namespace swiftlet::plan
