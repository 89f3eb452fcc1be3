// The plan as one JSON document: every input as understood and every
// figure, in base units (bytes, seconds as ms where named _ms, req/s, USD).
#include <nlohmann/json.hpp>

#include "plan/planner.h"

namespace swiftlet::plan {
namespace {

using OrderedJson = nlohmann::ordered_json;

OrderedJson Optional(const std::optional<double>& v) { return v ? OrderedJson(*v) : OrderedJson(nullptr); }
OrderedJson Target(double s) { return s > 0 ? OrderedJson(s * 1e3) : OrderedJson(nullptr); }

OrderedJson Roofline(const RooflineTime& t) {
  return {{"memory_ms", t.memory_s * 1e3},
          {"compute_ms", t.compute_s * 1e3},
          {"ms", t.seconds * 1e3},
          {"bound", t.compute_bound ? "compute" : "memory"}};
}

OrderedJson Batch(const BatchRow& b) {
  const ServingPoint& p = b.point;
  return {{"batch", b.batch},
          {"roofline", Roofline(b.roofline)},
          {"efficiency", b.efficiency},
          {"step_ms", p.step_s * 1e3},
          {"tpot_ms", p.tpot_s * 1e3},
          {"ttft_ms", p.ttft_s * 1e3},
          {"e2e_ms", p.e2e_s * 1e3},
          {"req_s", p.req_s},
          {"decode_tok_s", b.tok_s},
          {"memory_per_device_bytes", b.memory_per_device},
          {"meets_slo", b.meets_slo}};
}

}  // namespace

std::string PlanJson(const PlanReport& r) {
  const PlanInputs& in = r.inputs;
  const ModelSizing& m = in.model;
  const Hardware& hw = in.hardware;
  const Calibration& cal = in.calibration;

  OrderedJson decode = OrderedJson::array();
  for (const auto& [batch, f] : cal.efficiency.decode) decode.push_back({{"batch", batch}, {"factor", f}});
  OrderedJson points = OrderedJson::array();
  for (const CalibrationPoint& p : cal.points) {
    points.push_back({{"file", p.file},
                      {"what", p.what},
                      {"measured", p.measured},
                      {"modelled", p.modelled},
                      {"factor", p.factor}});
  }
  OrderedJson batches = OrderedJson::array();
  for (const BatchRow& b : r.batches) batches.push_back(Batch(b));
  OrderedJson sites = OrderedJson::array();
  for (const SitePlan& s : r.sites) {
    sites.push_back({{"name", s.name},
                     {"share", s.share},
                     {"demand_req_s", s.demand_req_s},
                     {"replicas", s.replicas},
                     {"devices", s.devices},
                     {"nodes", s.nodes},
                     {"cost_per_hour", Optional(s.cost_per_hour)},
                     {"storage_bytes", s.storage_bytes},
                     {"link_mbps", Optional(s.link_mbps)},
                     {"transfer_seconds", Optional(s.transfer_s)}});
  }
  OrderedJson curve = OrderedJson::array();
  for (const CostPoint& c : r.cost_curve) {
    curve.push_back({{"load_req_s", c.load_req_s},
                     {"devices", c.devices},
                     {"cost_per_hour", c.cost_per_hour},
                     {"cost_per_1k_tokens", c.cost_per_1k_tokens}});
  }
  OrderedJson at_slo = nullptr;
  if (r.feasible) {
    at_slo = Batch(r.at_slo);
    at_slo["replica_req_s"] = r.replica_req_s;
    at_slo["device_req_s"] = r.device_req_s;
    at_slo["device_tok_s"] = r.device_tok_s;
  }

  OrderedJson doc = {
      {"model",
       {{"name", in.model_name},
        {"weight_format", m.weight_format},
        {"arch", m.shape.arch},
        {"shape",
         {{"n_vocab", m.shape.n_vocab},
          {"n_ctx_train", m.shape.n_ctx_train},
          {"n_embd", m.shape.n_embd},
          {"n_layer", m.shape.n_layer},
          {"n_head", m.shape.n_head},
          {"n_head_kv", m.shape.n_head_kv},
          {"head_dim", m.shape.head_dim},
          {"n_ff", m.shape.n_ff},
          {"tied_embeddings", m.shape.tied_embeddings}}},
        {"n_params", m.cost.n_params},
        {"weights_bytes", m.weights_bytes},
        {"file_bytes", m.file_bytes},
        {"weight_bytes_per_token", m.cost.weight_bytes_per_token},
        {"int8_macs_per_token", m.cost.int8_macs_per_token},
        {"float_macs_per_token", m.cost.float_macs_per_token},
        {"attn_macs_per_position", m.cost.attn_macs_per_position}}},
      {"kv",
       {{"type", std::string(NameOf(in.kv_type))},
        {"bytes_per_token", r.kv_bytes_per_token},
        {"context", r.context},
        {"block_tokens", kKvBlockTokens},
        {"bytes_per_sequence", r.kv_bytes_per_sequence}}},
      {"hardware",
       {{"name", hw.name},
        {"description", hw.description},
        {"kind", std::string(DeviceKindName(hw.kind))},
        {"memory_bytes", hw.memory_bytes},
        {"bandwidth_gbs", hw.bandwidth_gbs},
        {"fp16_tflops", hw.fp16_tflops},
        {"int8_tops", hw.int8_tops},
        {"price_per_hour", Optional(hw.price_per_hour)},
        {"devices_per_node", hw.devices_per_node},
        {"source", hw.source}}},
      {"memory",
       {{"reserve", in.memory_reserve},
        {"usable_bytes_per_device", r.usable_bytes_per_device},
        {"tensor_parallel", r.tensor_parallel},
        {"weights_bytes_per_device", r.weights_bytes_per_device},
        {"max_concurrency", r.max_concurrency},
        {"batch_limit", r.batch_limit},
        {"max_batch", in.max_batch}}},
      {"load",
       {{"peak_req_s", in.load.peak_req_s},
        {"streams", in.load.streams},
        {"comment_rate", in.load.comment_rate},
        {"languages", in.load.languages},
        {"prompt_tokens", in.load.prompt_tokens},
        {"output_tokens", in.load.output_tokens},
        {"tokens_per_request", r.tokens_per_request}}},
      {"slo", {{"ttft_ms", Target(in.slo.ttft)}, {"tpot_ms", Target(in.slo.tpot)}, {"e2e_ms", Target(in.slo.e2e)}}},
      {"efficiency",
       {{"decode", decode},
        {"prefill", cal.efficiency.prefill},
        {"serving", cal.efficiency.serving},
        {"decode_fitted", cal.decode_fitted},
        {"prefill_fitted", cal.prefill_fitted},
        {"serving_fitted", cal.serving_fitted},
        {"files", in.calibration_files},
        {"machines", cal.machines},
        {"points", points}}},
      {"prefill",
       {{"tokens", in.load.prompt_tokens},
        {"roofline", Roofline(r.prefill_roofline)},
        {"ms", r.prefill_s * 1e3}}},
      {"feasible", r.feasible},
      {"infeasible_reason", r.feasible ? OrderedJson(nullptr) : OrderedJson(r.infeasible_reason)},
      {"at_slo", at_slo},
      {"sites", sites},
      {"totals",
       {{"devices", r.total_devices},
        {"cost_per_hour", Optional(r.cost_per_hour)},
        {"cost_per_1k_tokens", Optional(r.cost_per_1k_tokens)},
        {"cost_per_1k_output_tokens", Optional(r.cost_per_1k_output_tokens)},
        {"storage_bytes", r.storage_bytes},
        {"versions", in.versions}}},
      {"batches", batches},
      {"cost_curve", curve},
      {"notes", r.notes}};
  return doc.dump(2, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

}  // namespace swiftlet::plan
