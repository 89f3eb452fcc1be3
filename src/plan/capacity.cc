#include "plan/capacity.h"

#include <algorithm>
#include <cmath>

#include "core/checked_math.h"
#include "core/str_cat.h"

namespace swiftlet::plan {

absl::StatusOr<uint64_t> KvBytesPerToken(const ModelShape& shape, TensorType kv_type) {
  SWIFTLET_RETURN_IF_ERROR(CheckModelShape(shape));
  // One layer's K (or V) row: n_head_kv x head_dim elements, stored as one
  // row of kv_type (so q8_0 needs whole 32-element blocks).
  const uint64_t kv_dim = static_cast<uint64_t>(shape.n_head_kv) * static_cast<uint64_t>(shape.head_dim);
  uint64_t row = 0;
  if (!RowBytes(kv_type, kv_dim, &row)) {
    return absl::InvalidArgumentError(StrCat("--kv-type ", NameOf(kv_type), ": a K/V row of ",
                                             kv_dim, " elements is not whole blocks"));
  }
  // Bounded by CheckModelShape: row < 2^42, layers <= 2^10.
  return 2 * static_cast<uint64_t>(shape.n_layer) * row;
}

uint64_t KvBytesPerSequence(uint64_t kv_bytes_per_token, int64_t context) {
  const uint64_t blocks = (static_cast<uint64_t>(std::max<int64_t>(context, 0)) + kKvBlockTokens - 1) /
                          kKvBlockTokens;
  uint64_t out = 0;
  if (!CheckedMul(blocks * kKvBlockTokens, kv_bytes_per_token, &out)) return UINT64_MAX;
  return out;
}

int64_t MaxConcurrency(uint64_t usable_bytes, uint64_t weights_bytes,
                       uint64_t kv_bytes_per_sequence) {
  if (weights_bytes >= usable_bytes || kv_bytes_per_sequence == 0) return 0;
  const uint64_t n = (usable_bytes - weights_bytes) / kv_bytes_per_sequence;
  return static_cast<int64_t>(std::min<uint64_t>(n, INT64_MAX));
}

Work DecodeStepWork(const ModelCost& cost, uint64_t kv_bytes_per_token, int64_t batch,
                    double mean_context) {
  const double b = static_cast<double>(batch);
  Work w;
  w.bytes = static_cast<double>(cost.weight_bytes_per_token) +
            b * mean_context * static_cast<double>(kv_bytes_per_token);
  w.int8_ops = 2.0 * static_cast<double>(cost.int8_macs_per_token) * b;
  w.float_ops = 2.0 *
                (static_cast<double>(cost.float_macs_per_token) +
                 static_cast<double>(cost.attn_macs_per_position) * mean_context) *
                b;
  return w;
}

Work PrefillWork(const ModelCost& cost, uint64_t kv_bytes_per_token, double tokens) {
  Work w;
  w.bytes = static_cast<double>(cost.weight_bytes_per_token) +
            tokens * static_cast<double>(kv_bytes_per_token);
  w.int8_ops = 2.0 * static_cast<double>(cost.int8_macs_per_token) * tokens;
  w.float_ops = 2.0 * (static_cast<double>(cost.float_macs_per_token) * tokens +
                       static_cast<double>(cost.attn_macs_per_position) * tokens * (tokens + 1) / 2);
  return w;
}

RooflineTime RooflineSeconds(const Work& work, const MachineRates& m) {
  RooflineTime t;
  t.memory_s = m.bandwidth_gbs > 0 ? work.bytes / (m.bandwidth_gbs * 1e9) : INFINITY;
  if (work.int8_ops > 0) t.compute_s += m.int8_tops > 0 ? work.int8_ops / (m.int8_tops * 1e12) : INFINITY;
  if (work.float_ops > 0) {
    t.compute_s += m.float_tflops > 0 ? work.float_ops / (m.float_tflops * 1e12) : INFINITY;
  }
  t.compute_bound = t.compute_s > t.memory_s;
  t.seconds = std::max(t.memory_s, t.compute_s);
  return t;
}

double Efficiency::DecodeAt(int64_t batch) const {
  if (decode.empty()) return 1;
  if (batch <= decode.front().first) return decode.front().second;
  if (batch >= decode.back().first) return decode.back().second;
  const double x = std::log2(static_cast<double>(batch));
  for (size_t i = 1; i < decode.size(); ++i) {
    if (batch > decode[i].first) continue;
    const double x0 = std::log2(static_cast<double>(decode[i - 1].first));
    const double x1 = std::log2(static_cast<double>(decode[i].first));
    const double f = x1 > x0 ? (x - x0) / (x1 - x0) : 1;
    return decode[i - 1].second + f * (decode[i].second - decode[i - 1].second);
  }
  return decode.back().second;
}

ServingPoint ServeAt(int64_t batch, double step_s, const RequestShape& r) {
  ServingPoint p;
  p.batch = batch;
  p.step_s = step_s;
  const double b = static_cast<double>(batch);
  const double steps = static_cast<double>(std::max<int64_t>(r.output_tokens - 1, 0));
  if (steps == 0) {
    p.req_s = r.prefill_share_s > 0 ? 1.0 / r.prefill_share_s : INFINITY;
    p.tpot_s = 0;
  } else {
    p.req_s = b / (steps * step_s + b * r.prefill_share_s);
    p.tpot_s = step_s + b * r.prefill_share_s / steps;
  }
  p.ttft_s = r.ttft_prefill_s + step_s;
  p.e2e_s = p.ttft_s + steps * p.tpot_s;
  return p;
}

bool MeetsSlo(const ServingPoint& p, const SloSeconds& slo) {
  return (slo.ttft <= 0 || p.ttft_s <= slo.ttft) && (slo.tpot <= 0 || p.tpot_s <= slo.tpot) &&
         (slo.e2e <= 0 || p.e2e_s <= slo.e2e);
}

double MeanDecodeContext(const ReplicaModel& m) {
  return m.prompt_tokens + static_cast<double>(m.output_tokens) / 2;
}

RooflineTime DecodeRoofline(const ReplicaModel& m, int64_t batch) {
  return RooflineSeconds(DecodeStepWork(m.cost, m.kv_bytes_per_token, batch, MeanDecodeContext(m)),
                         m.machine);
}

RooflineTime PrefillRoofline(const ReplicaModel& m) {
  return RooflineSeconds(PrefillWork(m.cost, m.kv_bytes_per_token, m.prompt_tokens), m.machine);
}

ServingPoint EvaluateReplica(const ReplicaModel& m, int64_t batch) {
  RequestShape r;
  r.ttft_prefill_s = PrefillRoofline(m).seconds / m.efficiency.prefill;
  r.prefill_share_s = r.ttft_prefill_s / std::max(1.0, m.prefill_sharing);
  r.output_tokens = m.output_tokens;
  const double step_s = DecodeRoofline(m, batch).seconds / m.efficiency.DecodeAt(batch);
  return ServeAt(batch, step_s, r);
}

int64_t LargestSloBatch(const ReplicaModel& m, const SloSeconds& slo, int64_t limit) {
  // Latencies grow with the batch, but an efficiency curve need not be
  // monotone: test every batch size rather than bisect.
  int64_t best = 0;
  for (int64_t b = 1; b <= limit; ++b) {
    if (MeetsSlo(EvaluateReplica(m, b), slo)) best = b;
  }
  return best;
}

int64_t ReplicasFor(double demand_req_s, double replica_req_s, const Redundancy& r) {
  if (!(demand_req_s > 0)) return 0;
  if (!(replica_req_s > 0)) return -1;
  // A hair of slack so that a demand of exactly k replicas' worth, after
  // floating-point division, does not round up to k + 1.
  const double n = std::ceil(demand_req_s / replica_req_s - 1e-9);
  if (n > 1e15) return -1;
  int64_t replicas = std::max<int64_t>(1, static_cast<int64_t>(n));
  switch (r.rule) {
    case RedundancyRule::kNone: break;
    case RedundancyRule::kSpares: replicas += r.spares; break;
    case RedundancyRule::kDouble: replicas *= 2; break;
  }
  return replicas;
}

double TransferSeconds(uint64_t bytes, double mbps) {
  if (!(mbps > 0)) return INFINITY;
  return static_cast<double>(bytes) / 1e9 * 8000.0 / mbps;
}

double CostPer1kTokens(double cost_per_hour, double tokens_per_s) {
  if (!(tokens_per_s > 0)) return INFINITY;
  return cost_per_hour / (tokens_per_s * 3600.0) * 1000.0;
}

}  // namespace swiftlet::plan
