// swiftlet plan: how many devices at each site serve a model at a peak load
// within latency targets, at what cost, and how long the model takes to
// ship there. Deterministic arithmetic over the model's counted costs
// (perf/model_shape.h), the device's limits (plan/hardware.h) and the
// efficiency factors (plan/calibration.h), formula by formula as
// docs/PLANNING.md states them (plan/capacity.h holds each formula).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"
#include "perf/model_shape.h"
#include "plan/calibration.h"
#include "plan/capacity.h"
#include "plan/hardware.h"
#include "plan/plan_flags.h"

namespace swiftlet::plan {

inline constexpr int64_t kMaxPlanBatch = 4096;
inline constexpr int64_t kMaxTokens = int64_t{1} << 24;
inline constexpr int kMaxVersions = 100;

// The load at the peak, over all sites together.
struct LoadSpec {
  // Requests per second; for live translation, streams x comment_rate x
  // languages (plan/planner.cc fills it from those when they are given).
  double peak_req_s = 0;
  int64_t streams = 0;       // Live translation: concurrent live streams (0: --rate).
  double comment_rate = 0;   // Comments per second per stream.
  int64_t languages = 1;     // Target languages per comment: requests sharing one prefill.
  int64_t prompt_tokens = 64;
  int64_t output_tokens = 32;
};

struct PlanInputs {
  std::string model_name;  // The file path, or "preset qwen2.5-7b".
  ModelSizing model;
  TensorType kv_type = TensorType::kF16;
  int64_t context = 0;  // KV tokens held per sequence; 0: prompt + output.
  Hardware hardware;
  double memory_reserve = 0.10;  // Share of device memory kept for the runtime and activations.
  int tensor_parallel = 0;       // Devices per replica; 0: the fewest that hold the model.
  int64_t max_batch = 256;       // Sequences a replica runs at once, at most.
  LoadSpec load;
  SloSeconds slo;
  std::vector<Site> sites;       // Shares summing to 1.
  Redundancy redundancy;
  std::vector<double> link_mbps;  // Per site; empty: no transfer figures.
  int versions = 2;               // Model versions kept on each node (rollback).
  Calibration calibration;        // Factors 1 when not calibrated.
  std::vector<std::string> calibration_files;
};

// One batch size of the replica: its latencies and throughput.
struct BatchRow {
  int64_t batch = 0;
  RooflineTime roofline;  // The decode step, before efficiency.
  double efficiency = 1;  // Decode factor at this batch.
  ServingPoint point;     // Calibrated; req_s includes the serving factor.
  double tok_s = 0;       // Output tokens per second: batch / step.
  uint64_t memory_per_device = 0;
  bool meets_slo = false;
};

struct SitePlan {
  std::string name;
  double share = 0;
  double demand_req_s = 0;
  int64_t replicas = 0;  // With redundancy.
  int64_t devices = 0;
  int64_t nodes = 0;     // ceil(devices / devices_per_node).
  std::optional<double> cost_per_hour;
  uint64_t storage_bytes = 0;  // nodes x versions x file bytes.
  std::optional<double> link_mbps;
  std::optional<double> transfer_s;
};

struct CostPoint {
  double load_req_s = 0;
  int64_t devices = 0;
  double cost_per_hour = 0;
  double cost_per_1k_tokens = 0;
};

struct PlanReport {
  PlanInputs inputs;

  // Memory.
  uint64_t kv_bytes_per_token = 0;
  int64_t context = 0;
  uint64_t kv_bytes_per_sequence = 0;
  int tensor_parallel = 1;
  uint64_t usable_bytes_per_device = 0;
  uint64_t weights_bytes_per_device = 0;
  int64_t max_concurrency = 0;  // Sequences a replica's memory holds.
  int64_t batch_limit = 0;      // min(max_concurrency, max_batch).

  // Prefill of one request's prompt.
  RooflineTime prefill_roofline;
  double prefill_s = 0;  // Calibrated.

  // Latency and throughput by batch: every size 1..batch_limit.
  std::vector<BatchRow> batches;

  bool feasible = false;
  std::string infeasible_reason;
  int64_t slo_batch = 0;  // The largest batch meeting the targets.
  BatchRow at_slo;
  double replica_req_s = 0;  // Goodput of one replica at slo_batch.
  double device_req_s = 0;
  double device_tok_s = 0;   // Prompt + output tokens per second per device.
  double tokens_per_request = 0;

  std::vector<SitePlan> sites;
  int64_t total_devices = 0;
  std::optional<double> cost_per_hour;
  std::optional<double> cost_per_1k_tokens;         // Prompt + output tokens at the peak.
  std::optional<double> cost_per_1k_output_tokens;
  std::vector<CostPoint> cost_curve;  // From a tenth of the peak to twice it.
  uint64_t storage_bytes = 0;         // All sites.

  std::vector<std::string> notes;  // Caveats the reader should see.
};

// Checks the inputs (errors name the flag) and computes the plan. A plan
// whose targets no batch meets is still a plan: feasible is false and
// infeasible_reason says why.
absl::StatusOr<PlanReport> MakePlan(const PlanInputs& inputs);

// Batch sizes the text table shows: powers of two up to the limit, the
// SLO batch and the limit itself.
std::vector<const BatchRow*> TableRows(const PlanReport& report);

// ---- Outputs (plan/report_*.cc) ---------------------------------------------

std::string FormatPlanText(const PlanReport& report);
std::string PlanJson(const PlanReport& report);
// Self-contained: inline CSS and SVG, no scripts, no external references.
std::string PlanHtml(const PlanReport& report);

}  // namespace swiftlet::plan
