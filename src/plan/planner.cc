#include "plan/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/checked_math.h"
#include "core/str_cat.h"

namespace swiftlet::plan {
namespace {

constexpr double kMaxRate = 1e9;
constexpr int64_t kMaxStreams = 1'000'000'000;
constexpr double kMaxCommentRate = 1e6;
constexpr int64_t kMaxLanguages = 100;

absl::Status Invalid(std::string_view flag, const std::string& what) {
  return absl::InvalidArgumentError(StrCat(flag, ": ", what));
}

std::string Ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f ms", seconds * 1e3);
  return buf;
}

std::string Gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

absl::Status CheckInputs(const PlanInputs& in) {
  const LoadSpec& l = in.load;
  if (l.prompt_tokens < 1 || l.prompt_tokens > kMaxTokens) {
    return Invalid("--prompt-tokens", StrCat(l.prompt_tokens, " is outside 1..", kMaxTokens));
  }
  if (l.output_tokens < 1 || l.output_tokens > kMaxTokens) {
    return Invalid("--output-tokens", StrCat(l.output_tokens, " is outside 1..", kMaxTokens));
  }
  const int64_t needed = l.prompt_tokens + l.output_tokens;
  if (in.context != 0 && (in.context < needed || in.context > kMaxTokens)) {
    return Invalid("--context", StrCat(in.context, " is outside ", needed, " (prompt + output tokens)..",
                                       kMaxTokens));
  }
  const int64_t context = in.context != 0 ? in.context : needed;
  if (context > in.model.shape.n_ctx_train) {
    return Invalid(in.context != 0 ? "--context" : "--prompt-tokens",
                   StrCat("a sequence of ", context, " tokens exceeds the model's context of ",
                          in.model.shape.n_ctx_train));
  }
  if (l.streams != 0) {
    if (l.streams < 0 || l.streams > kMaxStreams) {
      return Invalid("--streams", StrCat(l.streams, " is outside 1..", kMaxStreams));
    }
    if (!(l.comment_rate > 0) || l.comment_rate > kMaxCommentRate) {
      return Invalid("--comment-rate", StrCat(l.comment_rate, " is outside (0, ", kMaxCommentRate, "]"));
    }
  } else if (!(l.peak_req_s > 0) || l.peak_req_s > kMaxRate) {
    return Invalid("--rate", StrCat(l.peak_req_s, " is outside (0, ", kMaxRate,
                                    "] (give --rate, or --streams and --comment-rate)"));
  }
  if (l.languages < 1 || l.languages > kMaxLanguages) {
    return Invalid("--languages", StrCat(l.languages, " is outside 1..", kMaxLanguages));
  }
  if (!(in.memory_reserve >= 0) || in.memory_reserve > 0.9) {
    return Invalid("--memory-reserve", StrCat(in.memory_reserve, " is outside 0..0.9"));
  }
  if (in.max_batch < 1 || in.max_batch > kMaxPlanBatch) {
    return Invalid("--max-batch", StrCat(in.max_batch, " is outside 1..", kMaxPlanBatch));
  }
  if (in.versions < 1 || in.versions > kMaxVersions) {
    return Invalid("--versions", StrCat(in.versions, " is outside 1..", kMaxVersions));
  }
  const int max_tp = in.hardware.kind == DeviceKind::kCpu ? 1 : in.hardware.devices_per_node;
  if (in.tensor_parallel < 0 || in.tensor_parallel > max_tp) {
    return Invalid("--tensor-parallel",
                   StrCat(in.tensor_parallel, " is outside 1..", max_tp,
                          in.hardware.kind == DeviceKind::kCpu ? " (a CPU node serves alone)"
                                                               : " (the devices of one node)"));
  }
  if (in.sites.empty()) return Invalid("--sites", "no sites");
  if (!in.link_mbps.empty() && in.link_mbps.size() != in.sites.size()) {
    return Invalid("--link-mbps", "not one speed per site");
  }
  if (in.hardware.memory_bytes == 0) return Invalid("--memory-gib", "the device has no memory");
  return absl::OkStatus();
}

// Devices (and cost) for `peak_req_s` split over the sites.
struct Fleet {
  std::vector<SitePlan> sites;
  int64_t devices = 0;
  double cost_per_hour = 0;
  bool ok = true;
};

Fleet PlanFleet(const PlanReport& r, double peak_req_s) {
  const PlanInputs& in = r.inputs;
  Fleet f;
  for (size_t i = 0; i < in.sites.size(); ++i) {
    SitePlan s;
    s.name = in.sites[i].name;
    s.share = in.sites[i].share;
    s.demand_req_s = peak_req_s * s.share;
    s.replicas = ReplicasFor(s.demand_req_s, r.replica_req_s, in.redundancy);
    if (s.replicas < 0) {
      f.ok = false;
      s.replicas = 0;
    }
    s.devices = s.replicas * r.tensor_parallel;
    const int64_t per_node = in.hardware.devices_per_node;
    s.nodes = (s.devices + per_node - 1) / per_node;
    if (in.hardware.price_per_hour) {
      s.cost_per_hour = static_cast<double>(s.devices) * *in.hardware.price_per_hour;
      f.cost_per_hour += *s.cost_per_hour;
    }
    // Saturates rather than wraps for absurd loads (the fleet is then
    // absurd too, and the report says so in its device count).
    if (!CheckedMul(static_cast<uint64_t>(s.nodes) * static_cast<uint64_t>(in.versions),
                    in.model.file_bytes, &s.storage_bytes)) {
      s.storage_bytes = UINT64_MAX;
    }
    if (!in.link_mbps.empty()) {
      s.link_mbps = in.link_mbps[i];
      s.transfer_s = TransferSeconds(in.model.file_bytes, in.link_mbps[i]);
    }
    f.devices += s.devices;
    f.sites.push_back(std::move(s));
  }
  return f;
}

}  // namespace

absl::StatusOr<PlanReport> MakePlan(const PlanInputs& inputs) {
  SWIFTLET_RETURN_IF_ERROR(CheckInputs(inputs));
  PlanReport r;
  r.inputs = inputs;
  PlanInputs& in = r.inputs;
  LoadSpec& load = in.load;
  if (load.streams > 0) {
    load.peak_req_s = static_cast<double>(load.streams) * load.comment_rate *
                      static_cast<double>(load.languages);
  } else {
    load.languages = 1;
  }
  const Hardware& hw = in.hardware;

  // ---- Memory.
  SWIFTLET_ASSIGN_OR_RETURN(r.kv_bytes_per_token, KvBytesPerToken(in.model.shape, in.kv_type));
  r.context = in.context != 0 ? in.context : load.prompt_tokens + load.output_tokens;
  r.kv_bytes_per_sequence = KvBytesPerSequence(r.kv_bytes_per_token, r.context);
  r.usable_bytes_per_device =
      static_cast<uint64_t>(static_cast<double>(hw.memory_bytes) * (1 - in.memory_reserve));
  const uint64_t weights = in.model.weights_bytes;
  if (in.tensor_parallel > 0) {
    r.tensor_parallel = in.tensor_parallel;
  } else {
    // The fewest devices (a power of two, as tensor parallelism splits
    // heads evenly) that hold the weights and one sequence.
    const int max_tp = hw.kind == DeviceKind::kCpu ? 1 : hw.devices_per_node;
    r.tensor_parallel = 0;
    for (int tp = 1; tp <= max_tp; tp *= 2) {
      if (MaxConcurrency(r.usable_bytes_per_device * static_cast<uint64_t>(tp), weights,
                         r.kv_bytes_per_sequence) >= 1) {
        r.tensor_parallel = tp;
        break;
      }
    }
    if (r.tensor_parallel == 0) {
      r.tensor_parallel = 1;
      r.weights_bytes_per_device = weights;
      r.infeasible_reason = StrCat("the weights (", Gib(weights), ") and one sequence's KV (",
                                   Gib(r.kv_bytes_per_sequence), ") do not fit in ",
                                   max_tp == 1 ? "one " : StrCat("up to ", max_tp, " x "), hw.name,
                                   " (", Gib(r.usable_bytes_per_device), " usable each)");
      return r;
    }
  }
  const uint64_t tp = static_cast<uint64_t>(r.tensor_parallel);
  r.weights_bytes_per_device = (weights + tp - 1) / tp;
  r.max_concurrency = MaxConcurrency(r.usable_bytes_per_device * tp, weights, r.kv_bytes_per_sequence);
  r.batch_limit = std::min(r.max_concurrency, in.max_batch);
  if (r.batch_limit < 1) {
    r.infeasible_reason = StrCat("the weights (", Gib(weights), ") and one sequence's KV (",
                                 Gib(r.kv_bytes_per_sequence), ") do not fit in ", tp, " x ",
                                 hw.name, " (", Gib(r.usable_bytes_per_device), " usable each)");
    return r;
  }

  // ---- One replica.
  ReplicaModel m;
  m.cost = in.model.cost;
  m.kv_bytes_per_token = r.kv_bytes_per_token;
  m.machine = {hw.bandwidth_gbs * static_cast<double>(tp), hw.int8_tops * static_cast<double>(tp),
               hw.fp16_tflops * static_cast<double>(tp)};
  m.efficiency = in.calibration.efficiency;
  m.prompt_tokens = static_cast<double>(load.prompt_tokens);
  m.prefill_sharing = static_cast<double>(load.languages);
  m.output_tokens = load.output_tokens;
  r.prefill_roofline = PrefillRoofline(m);
  r.prefill_s = r.prefill_roofline.seconds / m.efficiency.prefill;

  const double serving = m.efficiency.serving;
  r.batches.reserve(static_cast<size_t>(r.batch_limit));
  for (int64_t b = 1; b <= r.batch_limit; ++b) {
    BatchRow row;
    row.batch = b;
    row.roofline = DecodeRoofline(m, b);
    row.efficiency = m.efficiency.DecodeAt(b);
    row.point = EvaluateReplica(m, b);
    row.meets_slo = MeetsSlo(row.point, in.slo);
    row.point.req_s *= serving;
    row.tok_s = static_cast<double>(b) / row.point.step_s;
    row.memory_per_device =
        r.weights_bytes_per_device + (static_cast<uint64_t>(b) * r.kv_bytes_per_sequence + tp - 1) / tp;
    if (row.meets_slo) r.slo_batch = b;
    r.batches.push_back(row);
  }
  r.tokens_per_request = static_cast<double>(load.prompt_tokens + load.output_tokens);
  if (r.slo_batch == 0) {
    const ServingPoint& p = r.batches.front().point;
    std::string why;
    if (in.slo.ttft > 0 && p.ttft_s > in.slo.ttft) {
      why += StrCat("TTFT ", Ms(p.ttft_s), " > target ", Ms(in.slo.ttft));
    }
    if (in.slo.tpot > 0 && p.tpot_s > in.slo.tpot) {
      why += StrCat(why.empty() ? "" : ", ", "TPOT ", Ms(p.tpot_s), " > target ", Ms(in.slo.tpot));
    }
    if (in.slo.e2e > 0 && p.e2e_s > in.slo.e2e) {
      why += StrCat(why.empty() ? "" : ", ", "end to end ", Ms(p.e2e_s), " > target ", Ms(in.slo.e2e));
    }
    r.infeasible_reason = StrCat("no batch size meets the targets: at batch 1, ", why);
    return r;
  }
  r.feasible = true;
  r.at_slo = r.batches[static_cast<size_t>(r.slo_batch - 1)];
  r.replica_req_s = r.at_slo.point.req_s;
  r.device_req_s = r.replica_req_s / static_cast<double>(tp);
  r.device_tok_s = r.device_req_s * r.tokens_per_request;

  // ---- Fleet.
  Fleet fleet = PlanFleet(r, load.peak_req_s);
  if (!fleet.ok) return absl::InvalidArgumentError("--rate: the load needs more replicas than can be counted");
  r.sites = std::move(fleet.sites);
  r.total_devices = fleet.devices;
  for (const SitePlan& s : r.sites) {
    if (!CheckedAdd(r.storage_bytes, s.storage_bytes, &r.storage_bytes)) r.storage_bytes = UINT64_MAX;
  }
  if (hw.price_per_hour) {
    r.cost_per_hour = fleet.cost_per_hour;
    r.cost_per_1k_tokens = CostPer1kTokens(fleet.cost_per_hour, load.peak_req_s * r.tokens_per_request);
    r.cost_per_1k_output_tokens = CostPer1kTokens(
        fleet.cost_per_hour, load.peak_req_s * static_cast<double>(load.output_tokens));
    for (int i = 1; i <= 20; ++i) {
      const double at = load.peak_req_s * i / 10.0;
      const Fleet f = PlanFleet(r, at);
      r.cost_curve.push_back(
          {at, f.devices, f.cost_per_hour, CostPer1kTokens(f.cost_per_hour, at * r.tokens_per_request)});
    }
  }

  // ---- What the reader should keep in mind.
  const Efficiency& e = m.efficiency;
  if (e.decode.empty() && e.prefill == 1 && e.serving == 1) {
    r.notes.push_back(
        "uncalibrated: efficiency 1 is the bare roofline, a bound no server reaches; "
        "calibrate with --calibrate (bench engine and bench JSON files) or --efficiency");
  }
  if ((in.calibration.decode_fitted || in.calibration.prefill_fitted) && hw.kind == DeviceKind::kGpu) {
    r.notes.push_back("the efficiency factors were measured on a CPU and are applied to a GPU: "
                      "treat the latencies as rough until calibrated on the GPU itself");
  }
  if (tp > 1) {
    r.notes.push_back(StrCat("a replica spans ", tp, " devices (tensor parallel): their bandwidth and "
                             "peaks are added as if perfectly split; the all-reduce traffic "
                             "between them is not counted"));
  }
  if (!hw.price_per_hour) r.notes.push_back("no price for this hardware: give --price-per-hour for costs");
  if (in.link_mbps.empty()) r.notes.push_back("no --link-mbps: transfer times not computed");
  return r;
}

std::vector<const BatchRow*> TableRows(const PlanReport& r) {
  std::vector<const BatchRow*> rows;
  if (r.batches.empty()) return rows;
  const int64_t limit = static_cast<int64_t>(r.batches.size());
  std::vector<int64_t> sizes;
  for (int64_t b = 1; b <= limit; b *= 2) sizes.push_back(b);
  if (r.slo_batch > 0) sizes.push_back(r.slo_batch);
  sizes.push_back(limit);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  for (int64_t b : sizes) rows.push_back(&r.batches[static_cast<size_t>(b - 1)]);
  return rows;
}

}  // namespace swiftlet::plan
