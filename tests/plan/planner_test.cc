#include "plan/planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "plan/presets.h"

namespace swiftlet::plan {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kGib = uint64_t{1} << 30;

Hardware RoundDevice() {
  Hardware hw;
  hw.name = "round";
  hw.kind = DeviceKind::kGpu;
  hw.memory_bytes = 10 * kGib;
  hw.bandwidth_gbs = 100;
  hw.fp16_tflops = 10;
  hw.int8_tops = 20;
  hw.price_per_hour = 2.0;
  hw.devices_per_node = 4;
  return hw;
}

PlanInputs TinyLlamaF16() {
  PlanInputs in;
  in.model_name = "tinyllama";
  in.model = *SizeModelShape(FindModelPreset("tinyllama-1.1b")->shape, "F16");
  in.hardware = RoundDevice();
  in.load.peak_req_s = 20;
  in.load.prompt_tokens = 64;
  in.load.output_tokens = 32;
  in.slo = {0.5, 0.1, 0};
  in.sites = {{"hk", 0.5}, {"sg", 0.5}};
  in.redundancy = {RedundancyRule::kSpares, 1};
  in.link_mbps = {1000, 250};
  in.versions = 2;
  return in;
}

TEST(PlannerTest, TinyLlamaMemoryByHand) {
  auto r = MakePlan(TinyLlamaF16());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kv_bytes_per_token, 22'528u);
  EXPECT_EQ(r->context, 96);  // 64 + 32, six whole blocks of 16.
  EXPECT_EQ(r->kv_bytes_per_sequence, 96u * 22'528);
  // F16 weights: 1,100,048,384 parameters less 92,160 F32 norm weights.
  const uint64_t weights = (1'100'048'384u - 92'160u) * 2 + 92'160u * 4;
  EXPECT_EQ(r->inputs.model.weights_bytes, weights);
  EXPECT_EQ(r->usable_bytes_per_device, 9 * kGib);  // 10 GiB less 10%.
  EXPECT_EQ(r->tensor_parallel, 1);
  EXPECT_EQ(r->weights_bytes_per_device, weights);
  // (9 GiB - weights) / 2,162,688 bytes per sequence.
  EXPECT_EQ(r->max_concurrency, static_cast<int64_t>((9 * kGib - weights) / (96u * 22'528)));
  EXPECT_EQ(r->max_concurrency, 3450);
  EXPECT_EQ(r->batch_limit, 256);
  ASSERT_EQ(r->batches.size(), 256u);
  EXPECT_EQ(r->batches[9].memory_per_device, weights + 10 * 96u * 22'528);
}

TEST(PlannerTest, TinyLlamaRooflineByHand) {
  auto r = MakePlan(TinyLlamaF16());
  ASSERT_TRUE(r.ok()) << r.status();
  // Batch 1 attends 64 + 32 / 2 = 80 positions. Streamed F16 weights: every
  // 2-D tensor but the embedding, (1,099,956,224 - 65,536,000) x 2 bytes,
  // plus 80 x 22,528 bytes of KV, at 100 GB/s.
  const double bytes = (1'099'956'224.0 - 65'536'000.0) * 2 + 80 * 22'528.0;
  const BatchRow& b1 = r->batches[0];
  EXPECT_NEAR(b1.roofline.memory_s, bytes / 100e9, 1e-12);
  // Float ops 2 x (1,034,420,224 + 90,112 x 80) at 10 TFLOPS.
  EXPECT_NEAR(b1.roofline.compute_s, 2 * (1'034'420'224.0 + 90'112.0 * 80) / 10e12, 1e-12);
  EXPECT_FALSE(b1.roofline.compute_bound);
  EXPECT_EQ(b1.efficiency, 1);
  // Prefill of 64 tokens: compute 2 x (1,034,420,224 x 64 + 90,112 x 64 x
  // 65 / 2) / 10 TFLOPS = 13.3 ms, under the memory time of the weights
  // and 64 tokens of KV written, (2,068,840,448 + 64 x 22,528) / 100 GB/s.
  EXPECT_NEAR(r->prefill_roofline.compute_s, 2 * (1'034'420'224.0 * 64 + 90'112.0 * 64 * 65 / 2) / 10e12,
              1e-12);
  EXPECT_NEAR(r->prefill_roofline.seconds, (2'068'840'448.0 + 64 * 22'528.0) / 100e9, 1e-12);
  EXPECT_FALSE(r->prefill_roofline.compute_bound);
  // TTFT = prefill + one step; TPOT = step + batch x prefill / 31.
  EXPECT_NEAR(b1.point.ttft_s, r->prefill_s + b1.point.step_s, 1e-12);
  EXPECT_NEAR(b1.point.tpot_s, b1.point.step_s + r->prefill_s / 31, 1e-12);
}

TEST(PlannerTest, LargestBatchWithinTargetsAndTheFleet) {
  auto r = MakePlan(TinyLlamaF16());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->feasible);
  const size_t s = static_cast<size_t>(r->slo_batch);
  ASSERT_GE(s, 1u);
  EXPECT_TRUE(r->batches[s - 1].meets_slo);
  EXPECT_LE(r->batches[s - 1].point.tpot_s, 0.1);
  for (size_t b = s; b < r->batches.size(); ++b) EXPECT_FALSE(r->batches[b].meets_slo) << b + 1;
  EXPECT_EQ(r->replica_req_s, r->batches[s - 1].point.req_s);
  EXPECT_EQ(r->device_req_s, r->replica_req_s);
  EXPECT_NEAR(r->device_tok_s, r->device_req_s * 96, 1e-9);
  // Each site: ceil(10 req/s / replica) + 1 spare.
  const int64_t per_site = static_cast<int64_t>(std::ceil(10 / r->replica_req_s - 1e-9)) + 1;
  ASSERT_EQ(r->sites.size(), 2u);
  for (const SitePlan& site : r->sites) {
    EXPECT_EQ(site.demand_req_s, 10);
    EXPECT_EQ(site.replicas, per_site);
    EXPECT_EQ(site.devices, per_site);
    EXPECT_EQ(site.nodes, (per_site + 3) / 4);
    EXPECT_EQ(*site.cost_per_hour, 2.0 * static_cast<double>(per_site));
    EXPECT_EQ(site.storage_bytes, static_cast<uint64_t>(site.nodes) * 2 * r->inputs.model.file_bytes);
  }
  // 2,200,281,088 bytes: x 8000 / 1000 Mbps = 17.6 s; / 250 Mbps = 70.4 s.
  EXPECT_NEAR(*r->sites[0].transfer_s, 2.200281088 * 8, 1e-9);
  EXPECT_NEAR(*r->sites[1].transfer_s, 2.200281088 * 32, 1e-9);
  EXPECT_EQ(r->total_devices, 2 * per_site);
  EXPECT_EQ(*r->cost_per_hour, 4.0 * static_cast<double>(per_site));
  // Per 1K tokens: cost per hour / (20 req/s x 96 tokens x 3600) x 1000.
  EXPECT_NEAR(*r->cost_per_1k_tokens, *r->cost_per_hour / (20 * 96 * 3.6), 1e-12);
  EXPECT_NEAR(*r->cost_per_1k_output_tokens, *r->cost_per_hour / (20 * 32 * 3.6), 1e-12);
  ASSERT_EQ(r->cost_curve.size(), 20u);
  EXPECT_DOUBLE_EQ(r->cost_curve[9].load_req_s, 20);
  EXPECT_EQ(r->cost_curve[9].devices, r->total_devices);
}

TEST(PlannerTest, CalibrationFactorsSlowTheReplica) {
  PlanInputs in = TinyLlamaF16();
  auto bare = MakePlan(in);
  in.calibration.efficiency.decode = {{1, 0.5}};
  in.calibration.efficiency.prefill = 0.5;
  in.calibration.efficiency.serving = 0.8;
  auto slow = MakePlan(in);
  ASSERT_TRUE(bare.ok() && slow.ok());
  EXPECT_NEAR(slow->batches[0].point.step_s, 2 * bare->batches[0].point.step_s, 1e-12);
  EXPECT_NEAR(slow->prefill_s, 2 * bare->prefill_s, 1e-12);
  // At the same batch: the times double, so req/s halves, then x 0.8.
  EXPECT_NEAR(slow->batches[3].point.req_s, bare->batches[3].point.req_s / 2 * 0.8, 1e-9);
  EXPECT_LE(slow->slo_batch, bare->slo_batch);
  bool uncalibrated_note = false;
  for (const std::string& n : bare->notes) uncalibrated_note |= n.find("uncalibrated") != std::string::npos;
  EXPECT_TRUE(uncalibrated_note);
}

TEST(PlannerTest, LiveTranslationLoad) {
  PlanInputs in = TinyLlamaF16();
  in.load.peak_req_s = 0;
  in.load.streams = 100;
  in.load.comment_rate = 0.1;
  in.load.languages = 3;
  auto r = MakePlan(in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->inputs.load.peak_req_s, 30);  // 100 x 0.1 x 3.
  // Three requests share one prefill: a third of it per request.
  const BatchRow& b4 = r->batches[3];
  EXPECT_NEAR(b4.point.tpot_s, b4.point.step_s + 4 * r->prefill_s / 3 / 31, 1e-12);
  EXPECT_NEAR(b4.point.ttft_s, r->prefill_s + b4.point.step_s, 1e-12);
}

TEST(PlannerTest, SplitsAModelTooLargeForOneDevice) {
  PlanInputs in = TinyLlamaF16();
  in.model = *SizeModelShape(FindModelPreset("70b")->shape, "F16");
  auto catalog = ParseCatalog(BuiltInCatalogText(), "built-in");
  in.hardware = *FindHardware(*catalog, "h100-sxm");
  in.redundancy = {};
  auto r = MakePlan(in);
  ASSERT_TRUE(r.ok()) << r.status();
  // Llama-3.1-70B at F16 is about 131 GiB: two 80 GiB devices (72 usable).
  EXPECT_EQ(r->tensor_parallel, 2);
  EXPECT_EQ(r->weights_bytes_per_device, (r->inputs.model.weights_bytes + 1) / 2);
  EXPECT_EQ(r->kv_bytes_per_token, 327'680u);
  for (const SitePlan& s : r->sites) EXPECT_EQ(s.devices % 2, 0);
  bool tp_note = false;
  for (const std::string& n : r->notes) tp_note |= n.find("tensor parallel") != std::string::npos;
  EXPECT_TRUE(tp_note);
}

TEST(PlannerTest, InfeasiblePlansSayWhy) {
  PlanInputs in = TinyLlamaF16();
  in.model = *SizeModelShape(FindModelPreset("70b")->shape, "F16");
  auto catalog = ParseCatalog(BuiltInCatalogText(), "built-in");
  in.hardware = *FindHardware(*catalog, "t4");
  auto r = MakePlan(in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->feasible);
  EXPECT_THAT(r->infeasible_reason, HasSubstr("do not fit in up to 4 x t4"));

  in = TinyLlamaF16();
  in.slo = {0, 0.001, 0};
  r = MakePlan(in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->feasible);
  EXPECT_THAT(r->infeasible_reason, HasSubstr("TPOT"));
  EXPECT_TRUE(r->sites.empty());
}

TEST(PlannerTest, RejectsBadInputsNamingTheFlag) {
  struct Case {
    void (*edit)(PlanInputs&);
    const char* error;
  };
  const Case cases[] = {
      {[](PlanInputs& in) { in.context = 50; }, "--context"},
      {[](PlanInputs& in) { in.context = 4096; }, "exceeds the model's context of 2048"},
      {[](PlanInputs& in) { in.load.prompt_tokens = 2040; }, "exceeds the model's context"},
      {[](PlanInputs& in) { in.load.prompt_tokens = 0; }, "--prompt-tokens"},
      {[](PlanInputs& in) { in.load.output_tokens = -1; }, "--output-tokens"},
      {[](PlanInputs& in) { in.load.peak_req_s = 0; }, "--rate"},
      {[](PlanInputs& in) { in.load.peak_req_s = NAN; }, "--rate"},
      {[](PlanInputs& in) { in.load.streams = 10; }, "--comment-rate"},
      {[](PlanInputs& in) { in.load.languages = 0; }, "--languages"},
      {[](PlanInputs& in) { in.memory_reserve = 0.95; }, "--memory-reserve"},
      {[](PlanInputs& in) { in.max_batch = 0; }, "--max-batch"},
      {[](PlanInputs& in) { in.versions = 0; }, "--versions"},
      {[](PlanInputs& in) { in.tensor_parallel = 8; }, "--tensor-parallel"},
      {[](PlanInputs& in) {
         in.hardware.kind = DeviceKind::kCpu;
         in.tensor_parallel = 2;
       },
       "a CPU node serves alone"},
      {[](PlanInputs& in) { in.link_mbps = {1000}; }, "--link-mbps"},
      {[](PlanInputs& in) { in.sites.clear(); }, "--sites"},
  };
  for (const Case& c : cases) {
    PlanInputs in = TinyLlamaF16();
    c.edit(in);
    auto r = MakePlan(in);
    ASSERT_FALSE(r.ok()) << c.error;
    EXPECT_THAT(r.status().message(), HasSubstr(c.error));
  }
}

TEST(PlannerTest, TableRowsArePowersOfTwoTheSloBatchAndTheLimit) {
  auto r = MakePlan(TinyLlamaF16());
  ASSERT_TRUE(r.ok());
  std::vector<int64_t> sizes;
  for (const BatchRow* row : TableRows(*r)) sizes.push_back(row->batch);
  EXPECT_EQ(sizes.front(), 1);
  EXPECT_EQ(sizes.back(), 256);
  EXPECT_NE(std::find(sizes.begin(), sizes.end(), r->slo_batch), sizes.end());
  EXPECT_TRUE(std::is_sorted(sizes.begin(), sizes.end()));
}

}  // namespace
}  // namespace swiftlet::plan
