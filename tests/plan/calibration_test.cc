// Calibration against factors worked out by hand from small synthetic
// bench reports (the arithmetic is in the comments).
#include "plan/calibration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace swiftlet::plan {
namespace {

using ::testing::HasSubstr;

// A machine of 10 GB/s, 100 int8 GOPS and 50 fp32 GFLOPS, a model of 1e8
// streamed bytes and 1e8 int8 multiply-adds per token, 1000 attention
// multiply-adds per position, and 2 x 2 layers x 1 KV head x 64 x 2 bytes
// = 512 KV bytes per token.
std::string Engine(const std::string& results, bool with_shape = true) {
  const std::string model =
      with_shape ? R"("model": {"path": "/nonexistent.gguf", "kv_type": "F16",
        "weight_bytes_per_token": 100000000, "int8_macs_per_token": 100000000,
        "float_macs_per_token": 0, "attn_macs_per_position": 1000,
        "shape": {"arch": "llama", "n_vocab": 1000, "n_ctx_train": 4096, "n_embd": 128,
                  "n_layer": 2, "n_head": 2, "n_head_kv": 1, "head_dim": 64, "n_ff": 256,
                  "tied_embeddings": false}})"
                 : R"("model": {"path": "/nonexistent.gguf"})";
  return R"({"machine": {"cpu": "Test CPU", "threads": 2, "read_bandwidth_gbs": 10,
             "int8_peak_gops": 100, "fp32_peak_gflops": 50}, )" +
         model + R"(, "results": [)" + results + "]}";
}

const char* kPrompt = R"({"test": "pp128", "tok_s": 400, "prompt": true, "batch": 1,
                          "tokens_per_pass": 128, "mean_context": 64.5})";
const char* kDecode1 = R"({"test": "tg64", "tok_s": 50, "prompt": false, "batch": 1,
                           "tokens_per_pass": 1, "mean_context": 40.5})";
const char* kDecode16 = R"({"test": "tg64@b16", "tok_s": 400, "prompt": false, "batch": 16,
                            "tokens_per_pass": 16, "mean_context": 40.5})";

// pp128: bytes 1e8 + 128 x 512 -> 10.0066 ms; int8 2 x 1e8 x 128 / 1e11 =
// 256 ms + float 2 x 1000 x 128 x 129 / 2 / 5e10 = 0.33024 ms: compute,
// 0.25633024 s for 128 tokens. Factor = 400 / (128 / 0.25633024).
constexpr double kPrefillFactor = 400 * 0.25633024 / 128;
// tg b1: bytes 1e8 + 40.5 x 512 = 100,020,736 -> 10.0020736 ms, above the
// 2.00162 ms of compute. Factor = 50 / (1 / 0.0100020736).
constexpr double kDecode1Factor = 50 * 0.0100020736;
// tg b16: compute 16 x (2 ms + 1.62 us) = 32.02592 ms beats 10.03 ms of
// memory. Factor = 400 / (16 / 0.03202592).
constexpr double kDecode16Factor = 400 * 0.03202592 / 16;

TEST(CalibrationTest, EngineFactorsByHand) {
  auto cal = Calibrate({{"smol.json", Engine(std::string(kPrompt) + "," + kDecode1 + "," + kDecode16)}}, 64);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_TRUE(cal->decode_fitted);
  EXPECT_TRUE(cal->prefill_fitted);
  EXPECT_FALSE(cal->serving_fitted);
  EXPECT_NEAR(cal->efficiency.prefill, kPrefillFactor, 1e-9);
  ASSERT_EQ(cal->efficiency.decode.size(), 2u);
  EXPECT_EQ(cal->efficiency.decode[0].first, 1);
  EXPECT_NEAR(cal->efficiency.decode[0].second, kDecode1Factor, 1e-9);
  EXPECT_EQ(cal->efficiency.decode[1].first, 16);
  EXPECT_NEAR(cal->efficiency.decode[1].second, kDecode16Factor, 1e-9);
  EXPECT_EQ(cal->efficiency.serving, 1);
  ASSERT_EQ(cal->machines.size(), 1u);
  EXPECT_EQ(cal->machines[0], "Test CPU");
  ASSERT_EQ(cal->points.size(), 3u);
  EXPECT_EQ(cal->points[0].what, "prefill p128");
  EXPECT_NEAR(cal->points[1].modelled, 1 / 0.0100020736, 1e-6);
}

TEST(CalibrationTest, SeveralFilesAverageByBatch) {
  const std::string faster = std::string(kDecode1).replace(std::string(kDecode1).find("50"), 2, "60");
  auto cal = Calibrate({{"a.json", Engine(kDecode1)}, {"b.json", Engine(faster)}}, 64);
  ASSERT_TRUE(cal.ok()) << cal.status();
  ASSERT_EQ(cal->efficiency.decode.size(), 1u);
  EXPECT_NEAR(cal->efficiency.decode[0].second, (50 + 60) / 2.0 * 0.0100020736, 1e-9);
  EXPECT_FALSE(cal->prefill_fitted);
  EXPECT_EQ(cal->efficiency.prefill, 1);
}

TEST(CalibrationTest, OlderReportsGiveTheGeometryByName) {
  // No batch / mean_context fields: tg64@b16 is 16 sequences after an
  // 8-token prompt, attending 8 + (64 + 1) / 2 = 40.5 positions on average.
  auto cal = Calibrate({{"old.json", Engine(R"({"test": "tg64@b16", "tok_s": 400})")}}, 64);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_NEAR(cal->efficiency.decode[0].second, kDecode16Factor, 1e-9);
  // Without a recorded shape the model file is read, and here it is gone.
  auto old = Calibrate({{"older.json", Engine(kDecode1, /*with_shape=*/false)}}, 64);
  EXPECT_THAT(old.status().message(), HasSubstr("older.json"));
  EXPECT_THAT(old.status().message(), HasSubstr("cannot be read"));
}

TEST(CalibrationTest, TheBestTimedRunCounts) {
  // Median 45, best 50: the factor is the best run's, 50 x 0.0100020736.
  auto cal = Calibrate({{"e.json", Engine(R"({"test": "tg64", "tok_s": 45, "runs": [45, 50, 40]})")}}, 64);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_NEAR(cal->efficiency.decode[0].second, kDecode1Factor, 1e-9);
  EXPECT_EQ(cal->points[0].measured, 50);
  auto bad = Calibrate({{"e.json", Engine(R"({"test": "tg64", "tok_s": 45, "runs": [45, "fast"]})")}}, 64);
  EXPECT_THAT(bad.status().message(), HasSubstr("runs[1]"));
}

TEST(CalibrationTest, SampledDecodeIsNamedInItsPoints) {
  // bench engine --temperature: the decode factors include the host's draw,
  // and the report says so; the factors themselves are the same arithmetic.
  auto with_decode = [](const std::string& decode) {
    std::string e = Engine(std::string(kPrompt) + "," + kDecode16);
    return e.insert(e.rfind('}'), ", \"decode\": " + decode);
  };
  auto sampled = Calibrate({{"s.json", with_decode(R"({"sampled": true, "temperature": 0.8, "top_k": 40,
                                                        "top_p": 0.95, "min_p": 0, "host_threads": 2})")}},
                           64);
  ASSERT_TRUE(sampled.ok()) << sampled.status();
  ASSERT_EQ(sampled->points.size(), 2u);
  EXPECT_EQ(sampled->points[0].what, "prefill p128");
  EXPECT_EQ(sampled->points[1].what, "decode b16, sampled (temperature 0.80, top_k 40, top_p 0.95)");
  EXPECT_NEAR(sampled->efficiency.decode[0].second, kDecode16Factor, 1e-9);
  auto greedy = Calibrate({{"g.json", with_decode(R"({"sampled": false, "temperature": 0})")}}, 64);
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  EXPECT_EQ(greedy->points[1].what, "decode b16");
  for (const char* bad : {R"("yes")", R"({"sampled": 1})", R"({"sampled": true})",
                          R"({"sampled": true, "temperature": 500})", R"({"sampled": true, "temperature": 1, "top_p": 2})"}) {
    auto r = Calibrate({{"b.json", with_decode(bad)}}, 64);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("decode")) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("b.json")) << bad;
  }
}

std::string Load(double best_goodput, double other_goodput = 1.0) {
  return R"({"parameters": {"slo_ms": {"ttft": 2000, "tpot": 100, "e2e": 0},
             "prompt_tokens": "40", "output_tokens": "32"},
             "points": [{"goodput_req_s": )" + std::to_string(other_goodput) + R"(, "mean_prompt_tokens": 48, "mean_cached_prompt_tokens": 8},
                        {"goodput_req_s": )" +
         std::to_string(best_goodput) + R"(, "mean_prompt_tokens": 40, "mean_cached_prompt_tokens": 0}]})";
}

TEST(CalibrationTest, ServingFactorByHand) {
  // Decode factor d = kDecode1Factor at every batch, prefill factor p =
  // kPrefillFactor. The load: 40 uncached prompt tokens, 32 output tokens,
  // TPOT target 100 ms; decode steps attend 40 + 32 / 2 = 56 positions.
  auto cal = Calibrate({{"e.json", Engine(std::string(kPrompt) + "," + kDecode1)}, {"l.json", Load(3.0)}}, 64);
  ASSERT_TRUE(cal.ok()) << cal.status();
  ASSERT_TRUE(cal->serving_fitted);
  const double d = kDecode1Factor;
  const double p = kPrefillFactor;
  // Prefill of 40: compute 2 x 1e8 x 40 / 1e11 = 80 ms + 2 x 1000 x 40 x 41
  // / 2 / 5e10 = 32.8 us.
  const double prefill = (0.08 + 3.28e-5) / p;
  // A step of b sequences: memory (1e8 + b x 56 x 512) / 1e10, compute
  // b x (2 ms + 2 x 1000 x 56 / 5e10); the larger, over d.
  auto step = [&](int b) {
    return std::max((1e8 + b * 56 * 512.0) / 1e10, b * (0.002 + 2.24e-6)) / d;
  };
  auto tpot = [&](int b) { return step(b) + b * prefill / 31; };
  // b = 13 meets 100 ms, b = 14 does not.
  EXPECT_LT(tpot(13), 0.1);
  EXPECT_GT(tpot(14), 0.1);
  const double modelled = 13 / (31 * step(13) + 13 * prefill);
  const CalibrationPoint& g = cal->points.back();
  EXPECT_THAT(g.what, HasSubstr("batch 13"));
  EXPECT_NEAR(g.modelled, modelled, 1e-9);
  EXPECT_EQ(g.measured, 3.0);
  EXPECT_NEAR(cal->efficiency.serving, 3.0 / modelled, 1e-9);
}

TEST(CalibrationTest, RejectsBadInputs) {
  struct Case {
    std::vector<CalibrationInput> inputs;
    std::string error;
  };
  const Case cases[] = {
      {{{"l.json", Load(3)}}, "must follow"},
      {{{"x.json", R"({"hello": 1})"}}, "neither"},
      {{{"x.json", "[1, 2"}}, "not valid JSON"},
      {{{"e.json", Engine(kDecode1)}, {"l.json", Load(0, 0)}}, "goodput 0"},
      {{{"e.json", Engine(R"({"test": "warmup", "tok_s": 3})")}}, "is not ppN"},
      {{{"e.json", Engine(R"({"test": "tg64", "tok_s": -3})")}}, "tok_s"},
      {{{"e.json", Engine("")}}, "results must be"},
      {{{"e.json", std::string(Engine(kDecode1)).replace(Engine(kDecode1).find("\"F16\""), 5, "\"Q4_0\"")}},
       "kv_type"},
      {{{"e.json", std::string(Engine(kDecode1)).replace(Engine(kDecode1).find("\"n_head_kv\": 1"), 14,
                                                          "\"n_head_kv\": 3")}},
       "n_head_kv"},
  };
  for (const Case& c : cases) {
    auto r = Calibrate(c.inputs, 64);
    ASSERT_FALSE(r.ok()) << c.error;
    EXPECT_THAT(r.status().message(), HasSubstr(c.error));
  }
  EXPECT_FALSE(CalibrateFromFiles({"/nonexistent/bench.json"}, 64).ok());
  std::vector<std::string> many(kMaxCalibrationFiles + 1, "/nonexistent");
  EXPECT_THAT(CalibrateFromFiles(many, 64).status().message(), HasSubstr("more than"));
}

TEST(CalibrationTest, ReadsRecordedBenchOutput) {
  // Real `swiftlet bench engine --json` and `swiftlet bench --json` files
  // (docs/PLANNING.md's runs): they parse, and every factor is what the
  // points say it is.
  const std::string dir = std::string(SWIFTLET_SOURCE_DIR) + "/docs/planning/";
  auto cal = CalibrateFromFiles({dir + "smol_engine_g.json", dir + "smol_load.json"}, 64);
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_TRUE(cal->decode_fitted && cal->prefill_fitted && cal->serving_fitted);
  ASSERT_EQ(cal->points.size(), 5u);  // pp128, tg32 at b1, b4, b16, goodput.
  for (const CalibrationPoint& p : cal->points) {
    EXPECT_GT(p.measured, 0) << p.what;
    EXPECT_NEAR(p.factor, p.measured / p.modelled, 1e-12) << p.what;
  }
  EXPECT_EQ(cal->points[1].what, "decode b1");
  EXPECT_EQ(cal->efficiency.decode.size(), 3u);
  ASSERT_EQ(cal->machines.size(), 1u);
}

TEST(CalibrationTest, TargetsNoBatchMeetsCannotCalibrate) {
  std::string load = Load(3);
  load.replace(load.find("\"tpot\": 100"), 11, "\"tpot\": 1");
  auto r = Calibrate({{"e.json", Engine(kDecode1)}, {"l.json", load}}, 64);
  EXPECT_THAT(r.status().message(), HasSubstr("no batch size meets"));
}

}  // namespace
}  // namespace swiftlet::plan
