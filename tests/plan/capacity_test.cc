// The planner's formulas against values worked out by hand (each comment
// shows the arithmetic), not against the code's own output.
#include "plan/capacity.h"

#include <gtest/gtest.h>

#include <cmath>

namespace swiftlet::plan {
namespace {

ModelShape TinyLlama() {
  ModelShape s;
  s.arch = "llama";
  s.n_vocab = 32000;
  s.n_ctx_train = 2048;
  s.n_embd = 2048;
  s.n_layer = 22;
  s.n_head = 32;
  s.n_head_kv = 4;
  s.head_dim = 64;
  s.n_ff = 5632;
  return s;
}

TEST(KvBytesTest, TinyLlamaPerToken) {
  // 2 (K and V) x 22 layers x 4 KV heads x 64 x 2 bytes = 22,528.
  EXPECT_EQ(*KvBytesPerToken(TinyLlama(), TensorType::kF16), 22'528u);
  EXPECT_EQ(*KvBytesPerToken(TinyLlama(), TensorType::kF32), 45'056u);
  // q8_0: a 256-element row is 8 blocks of 34 bytes = 272; x 2 x 22.
  EXPECT_EQ(*KvBytesPerToken(TinyLlama(), TensorType::kQ8_0), 11'968u);
}

TEST(KvBytesTest, QwenAndLlamaShapes) {
  // Llama-3.1-70B: 2 x 80 x 8 x 128 x 2 = 327,680 bytes per token.
  ModelShape s = TinyLlama();
  s.n_layer = 80;
  s.n_embd = 8192;
  s.n_head = 64;
  s.n_head_kv = 8;
  s.head_dim = 128;
  EXPECT_EQ(*KvBytesPerToken(s, TensorType::kF16), 327'680u);
}

TEST(KvBytesTest, Q8_0NeedsWholeBlocks) {
  ModelShape s = TinyLlama();
  s.n_head = 3;
  s.n_head_kv = 1;
  s.head_dim = 18;  // An 18-element row is not a whole 32-element block.
  EXPECT_FALSE(KvBytesPerToken(s, TensorType::kQ8_0).ok());
  EXPECT_EQ(*KvBytesPerToken(s, TensorType::kF16), 2u * 22 * 18 * 2);
}

TEST(MemoryTest, SequencesHoldWholeBlocks) {
  // 100 tokens take 7 blocks of 16 = 112 tokens: 112 x 22,528 = 2,523,136.
  EXPECT_EQ(KvBytesPerSequence(22'528, 100), 2'523'136u);
  EXPECT_EQ(KvBytesPerSequence(22'528, 96), 96u * 22'528);
  EXPECT_EQ(KvBytesPerSequence(1, 1), 16u);
}

TEST(MemoryTest, LargestConcurrency) {
  // (1000 - 400) / 100 = 6.
  EXPECT_EQ(MaxConcurrency(1000, 400, 100), 6);
  EXPECT_EQ(MaxConcurrency(1000, 401, 100), 5);
  EXPECT_EQ(MaxConcurrency(1000, 1000, 100), 0);
  EXPECT_EQ(MaxConcurrency(1000, 2000, 100), 0);
  // 80 GiB x 0.9 usable, 4 GiB weights, 1 MiB per sequence: 69,632.
  const uint64_t gib = uint64_t{1} << 30;
  EXPECT_EQ(MaxConcurrency(72 * gib, 4 * gib, uint64_t{1} << 20), 68 * 1024);
}

ModelCost Cost() {
  ModelCost c;
  c.weight_bytes_per_token = 1'000'000'000;
  c.int8_macs_per_token = 1'000'000'000;
  c.float_macs_per_token = 0;
  c.attn_macs_per_position = 1000;
  return c;
}

TEST(RooflineTest, DecodeStepByHand) {
  // Batch 4 at 100 positions, 1000 KV bytes per token:
  //   bytes = 1e9 + 4 x 100 x 1000 = 1,000,400,000
  //   int8  = 2 x 1e9 x 4 = 8e9;  float = 2 x (0 + 1000 x 100) x 4 = 8e5
  const Work w = DecodeStepWork(Cost(), 1000, 4, 100);
  EXPECT_DOUBLE_EQ(w.bytes, 1'000'400'000.0);
  EXPECT_DOUBLE_EQ(w.int8_ops, 8e9);
  EXPECT_DOUBLE_EQ(w.float_ops, 8e5);
  // 100 GB/s: 10.004 ms; int8 100 TOPS: 80 us, float 10 TFLOPS: 0.08 us.
  const RooflineTime t = RooflineSeconds(w, {100, 100, 10});
  EXPECT_NEAR(t.memory_s, 0.010004, 1e-12);
  EXPECT_NEAR(t.compute_s, 8e-5 + 8e-8, 1e-15);
  EXPECT_DOUBLE_EQ(t.seconds, t.memory_s);
  EXPECT_FALSE(t.compute_bound);
  // The same work on a machine with 1 TOPS: 8 ms + 0.08 us of compute
  // against 10.004 ms of memory: still memory; at 0.5 TOPS compute binds.
  EXPECT_FALSE(RooflineSeconds(w, {100, 1, 10}).compute_bound);
  const RooflineTime c = RooflineSeconds(w, {100, 0.5, 10});
  EXPECT_TRUE(c.compute_bound);
  EXPECT_NEAR(c.seconds, 0.016 + 8e-8, 1e-12);
}

TEST(RooflineTest, PrefillByHand) {
  // 10 tokens: bytes = 1e9 + 10 x 1000; int8 = 2 x 1e9 x 10 = 2e10;
  // float = 2 x (0 + 1000 x 10 x 11 / 2) = 110,000.
  const Work w = PrefillWork(Cost(), 1000, 10);
  EXPECT_DOUBLE_EQ(w.bytes, 1'000'010'000.0);
  EXPECT_DOUBLE_EQ(w.int8_ops, 2e10);
  EXPECT_DOUBLE_EQ(w.float_ops, 110'000.0);
}

TEST(EfficiencyTest, InterpolatesInLogBatch) {
  Efficiency e;
  EXPECT_EQ(e.DecodeAt(7), 1);
  e.decode = {{1, 0.5}, {4, 0.7}, {16, 0.9}};
  EXPECT_DOUBLE_EQ(e.DecodeAt(1), 0.5);
  EXPECT_NEAR(e.DecodeAt(2), 0.6, 1e-12);   // Half way from log2 1 to log2 4.
  EXPECT_DOUBLE_EQ(e.DecodeAt(4), 0.7);
  EXPECT_NEAR(e.DecodeAt(8), 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(e.DecodeAt(64), 0.9);    // Beyond the last point: its value.
}

TEST(ServeTest, ByHand) {
  // Batch 8, 50 ms steps, 200 ms prefill per request, 33 output tokens:
  //   req/s = 8 / (32 x 0.05 + 8 x 0.2) = 2.5
  //   tpot  = 0.05 + 8 x 0.2 / 32 = 0.1;  ttft = 0.2 + 0.05 = 0.25
  //   e2e   = 0.25 + 32 x 0.1 = 3.45
  RequestShape r;
  r.ttft_prefill_s = 0.2;
  r.prefill_share_s = 0.2;
  r.output_tokens = 33;
  const ServingPoint p = ServeAt(8, 0.05, r);
  EXPECT_DOUBLE_EQ(p.req_s, 2.5);
  EXPECT_DOUBLE_EQ(p.tpot_s, 0.1);
  EXPECT_DOUBLE_EQ(p.ttft_s, 0.25);
  EXPECT_DOUBLE_EQ(p.e2e_s, 3.45);
  EXPECT_TRUE(MeetsSlo(p, {0.25, 0.1, 0}));
  EXPECT_FALSE(MeetsSlo(p, {0.24, 0, 0}));
  EXPECT_FALSE(MeetsSlo(p, {0, 0.099, 0}));
  EXPECT_FALSE(MeetsSlo(p, {0, 0, 3.4}));
  // One output token: the prefill alone limits, 1 / 0.2 = 5 req/s.
  r.output_tokens = 1;
  EXPECT_DOUBLE_EQ(ServeAt(8, 0.05, r).req_s, 5);
  EXPECT_DOUBLE_EQ(ServeAt(8, 0.05, r).tpot_s, 0);
}

TEST(ServeTest, ReplicaPutsThePiecesTogether) {
  // 1 GB of weights at 100 GB/s: 10 ms a step (memory-bound), prefill of 16
  // tokens at 1 TOPS: 2 x 1e9 x 16 / 1e12 = 32 ms (compute-bound).
  ReplicaModel m;
  m.cost = Cost();
  m.cost.attn_macs_per_position = 0;
  m.kv_bytes_per_token = 0;
  m.machine = {100, 1, 1};
  m.prompt_tokens = 16;
  m.output_tokens = 11;
  m.efficiency.decode = {{1, 0.5}};
  m.efficiency.prefill = 0.8;
  EXPECT_NEAR(PrefillRoofline(m).seconds, 0.032, 1e-12);
  EXPECT_TRUE(PrefillRoofline(m).compute_bound);
  // Step 10 ms / 0.5 = 20 ms; prefill 32 / 0.8 = 40 ms. Batch 2:
  //   req/s = 2 / (10 x 0.02 + 2 x 0.04) = 2 / 0.28;  tpot = 0.02 + 0.08 / 10
  const ServingPoint p = EvaluateReplica(m, 2);
  EXPECT_NEAR(p.step_s, 0.02, 1e-12);
  EXPECT_NEAR(p.req_s, 2 / 0.28, 1e-9);
  EXPECT_NEAR(p.tpot_s, 0.028, 1e-12);
  EXPECT_NEAR(p.ttft_s, 0.06, 1e-12);
  // Shared by 4 languages, each request pays a quarter of the prefill.
  m.prefill_sharing = 4;
  EXPECT_NEAR(EvaluateReplica(m, 2).req_s, 2 / (0.2 + 2 * 0.01), 1e-9);
  EXPECT_NEAR(EvaluateReplica(m, 2).ttft_s, 0.06, 1e-12);
  // The step grows with the batch only once compute binds: 2 x 1e9 x b /
  // 1e12 > 0.01 s from b = 6. tpot = step/0.5 + b x 0.01 / 10:
  //   b = 8: 0.032 + 0.008 = 0.040 meets 40 ms; b = 9: 0.036 + 0.009 misses.
  EXPECT_EQ(LargestSloBatch(m, {0, 0.040 + 1e-12, 0}, 64), 8);
  EXPECT_EQ(LargestSloBatch(m, {0, 0.001, 0}, 64), 0);
}

TEST(FleetTest, ReplicasWithRedundancy) {
  EXPECT_EQ(ReplicasFor(25, 10, {}), 3);
  EXPECT_EQ(ReplicasFor(30, 10, {}), 3);  // Exactly three replicas' worth.
  EXPECT_EQ(ReplicasFor(0.1, 10, {}), 1);
  EXPECT_EQ(ReplicasFor(0, 10, {}), 0);
  EXPECT_EQ(ReplicasFor(25, 10, {RedundancyRule::kSpares, 1}), 4);
  EXPECT_EQ(ReplicasFor(25, 10, {RedundancyRule::kSpares, 2}), 5);
  EXPECT_EQ(ReplicasFor(25, 10, {RedundancyRule::kDouble, 0}), 6);
}

TEST(FleetTest, TransferAndCost) {
  // 10 GB over 1,000 Mbps: 10 x 8000 / 1000 = 80 s.
  EXPECT_DOUBLE_EQ(TransferSeconds(10'000'000'000, 1000), 80);
  EXPECT_DOUBLE_EQ(TransferSeconds(4'500'000'000, 100), 360);
  EXPECT_TRUE(std::isinf(TransferSeconds(1, 0)));
  // $10 an hour for 1,000 tokens/s: 10 / 3.6e6 tokens x 1000.
  EXPECT_NEAR(CostPer1kTokens(10, 1000), 10.0 / 3600, 1e-12);
}

}  // namespace
}  // namespace swiftlet::plan
