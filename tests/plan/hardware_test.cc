#include "plan/hardware.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

namespace swiftlet::plan {
namespace {

using ::testing::HasSubstr;

TEST(CatalogTest, BuiltInCatalogLoadsAndHasTheIssuesDevices) {
  auto catalog = ParseCatalog(BuiltInCatalogText(), "built-in");
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  std::set<std::string> names;
  for (const Hardware& h : *catalog) names.insert(h.name);
  for (const char* want : {"t4", "l4", "a10", "l40s", "a100-40gb", "a100-80gb", "h100-sxm", "h200"}) {
    EXPECT_TRUE(names.count(want)) << want;
  }
  int cpus = 0;
  for (const Hardware& h : *catalog) {
    SCOPED_TRACE(h.name);
    EXPECT_GT(h.memory_bytes, 0u);
    EXPECT_GT(h.bandwidth_gbs, 0);
    EXPECT_GT(h.int8_tops, h.fp16_tflops);  // Every device here does int8 faster.
    EXPECT_TRUE(h.price_per_hour.has_value());
    cpus += h.kind == DeviceKind::kCpu;
  }
  EXPECT_GE(cpus, 1);
  // Datasheet figures of the H100 SXM: 80 GB HBM3 at 3.35 TB/s, 989 dense
  // fp16 TFLOPS, 1,979 dense int8 TOPS.
  auto h100 = FindHardware(*catalog, "H100-SXM");
  ASSERT_TRUE(h100.ok());
  EXPECT_EQ(h100->memory_bytes, uint64_t{80} << 30);
  EXPECT_EQ(h100->bandwidth_gbs, 3350);
  EXPECT_EQ(h100->fp16_tflops, 989);
  EXPECT_EQ(h100->int8_tops, 1979);
  EXPECT_EQ(h100->devices_per_node, 8);
  auto t4 = FindHardware(*catalog, "t4");
  ASSERT_TRUE(t4.ok());
  EXPECT_EQ(t4->bandwidth_gbs, 320);
  EXPECT_EQ(t4->int8_tops, 130);
}

TEST(CatalogTest, UnknownNameListsTheChoices) {
  auto catalog = ParseCatalog(BuiltInCatalogText(), "built-in");
  ASSERT_TRUE(catalog.ok());
  auto r = FindHardware(*catalog, "b200");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("h100-sxm"));
}

std::string Entry(const std::string& fields) {
  return R"({"hardware": [{"name": "x1", "kind": "gpu", "memory_gib": 24, "bandwidth_gbs": 600,
             "fp16_tflops": 100, "int8_tops": 200)" + fields + "}]}";
}

TEST(CatalogTest, ParsesAnEntry) {
  auto c = ParseCatalog(Entry(R"(, "price_per_hour": 1.25, "devices_per_node": 4)"), "mine.json");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 1u);
  const Hardware& h = (*c)[0];
  EXPECT_EQ(h.memory_bytes, uint64_t{24} << 30);
  EXPECT_EQ(*h.price_per_hour, 1.25);
  EXPECT_EQ(h.devices_per_node, 4);
  EXPECT_EQ(h.source, "mine.json");
  // Price is optional.
  auto no_price = ParseCatalog(Entry(""), "mine.json");
  ASSERT_TRUE(no_price.ok());
  EXPECT_FALSE((*no_price)[0].price_per_hour.has_value());
}

TEST(CatalogTest, RejectsBadCatalogsNamingTheField) {
  struct Case {
    std::string text;
    std::string error;
  };
  const std::string ok_entry =
      R"({"name": "a", "kind": "gpu", "memory_gib": 1, "bandwidth_gbs": 1, "fp16_tflops": 1, "int8_tops": 1})";
  const Case cases[] = {
      {"not json", "not valid JSON"},
      {"{}", "no \"hardware\" array"},
      {R"({"hardware": []})", "empty"},
      {R"({"hardware": [1]})", "not an object"},
      {Entry(R"(, "price_per_hour": -1)"), "price_per_hour"},
      {Entry(R"(, "devices_per_node": 0)"), "devices_per_node"},
      {Entry(R"(, "devices_per_node": 1.5)"), "not an integer"},
      {R"({"hardware": [{"name": "a", "kind": "gpu", "memory_gib": 1, "bandwidth_gbs": 1, "fp16_tflops": 1}]})",
       "int8_tops: is missing"},
      {R"({"hardware": [{"name": "a", "kind": "tpu", "memory_gib": 1, "bandwidth_gbs": 1, "fp16_tflops": 1, "int8_tops": 1}]})",
       "not gpu or cpu"},
      {R"({"hardware": [{"name": "A B", "kind": "gpu", "memory_gib": 1, "bandwidth_gbs": 1, "fp16_tflops": 1, "int8_tops": 1}]})",
       "lower-case"},
      {R"({"hardware": [{"name": "a", "kind": "gpu", "memory_gib": "1", "bandwidth_gbs": 1, "fp16_tflops": 1, "int8_tops": 1}]})",
       "memory_gib: is a string"},
      {R"({"hardware": [{"name": "a", "kind": "gpu", "memory_gib": 1, "bandwidth_gbs": 0, "fp16_tflops": 1, "int8_tops": 1}]})",
       "bandwidth_gbs: 0 is outside"},
      {R"({"hardware": [{"name": "a", "kind": "gpu", "memory_gib": 1e300, "bandwidth_gbs": 1, "fp16_tflops": 1, "int8_tops": 1}]})",
       "memory_gib"},
      {"{\"hardware\": [" + ok_entry + ", " + ok_entry + "]}", "appears twice"},
      {std::string(100, '[') + std::string(100, ']'), "nested deeper"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text.substr(0, 80));
    auto r = ParseCatalog(c.text, "bad.json");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("bad.json"));
    EXPECT_THAT(r.status().message(), HasSubstr(c.error));
  }
  EXPECT_FALSE(ParseCatalog(std::string(kMaxCatalogBytes + 1, ' '), "big.json").ok());
  EXPECT_FALSE(LoadCatalogFile("/nonexistent/catalog.json").ok());
}

constexpr const char* kProfile = R"({
  "machine": {"cpu": "AMD EPYC", "threads": 2, "read_bandwidth_gbs": 18.5,
              "int8_peak_gops": 400, "fp32_peak_gflops": 120, "memory_bytes": 25000000000},
  "model": {}, "results": []})";

TEST(CpuProfileTest, ReadsTheMeasuredLimits) {
  auto hw = ParseCpuProfile(kProfile, "bench.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_EQ(hw->kind, DeviceKind::kCpu);
  EXPECT_EQ(hw->bandwidth_gbs, 18.5);
  EXPECT_DOUBLE_EQ(hw->int8_tops, 0.4);
  EXPECT_DOUBLE_EQ(hw->fp16_tflops, 0.12);
  EXPECT_EQ(hw->memory_bytes, 25'000'000'000u);
  EXPECT_FALSE(hw->price_per_hour.has_value());
  EXPECT_THAT(hw->description, HasSubstr("AMD EPYC"));
}

TEST(CpuProfileTest, RejectsOtherDocuments) {
  EXPECT_THAT(ParseCpuProfile(R"({"points": []})", "load.json").status().message(),
              HasSubstr("bench engine"));
  EXPECT_THAT(ParseCpuProfile(R"({"machine": {"threads": 2, "int8_peak_gops": 1, "fp32_peak_gflops": 1}})",
                              "old.json")
                  .status()
                  .message(),
              HasSubstr("read_bandwidth_gbs: is missing"));
}

TEST(OverridesTest, ReplaceFieldsWithinBounds) {
  auto hw = ParseCpuProfile(kProfile, "bench.json");
  ASSERT_TRUE(hw.ok());
  HardwareOverrides o;
  o.memory_gib = 16;
  o.bandwidth_gbs = 30;
  o.price_per_hour = 0.5;
  ASSERT_TRUE(ApplyOverrides(o, *hw).ok());
  EXPECT_EQ(hw->memory_bytes, uint64_t{16} << 30);
  EXPECT_EQ(hw->bandwidth_gbs, 30);
  EXPECT_EQ(*hw->price_per_hour, 0.5);
  EXPECT_DOUBLE_EQ(hw->int8_tops, 0.4);  // Untouched.

  HardwareOverrides bad;
  bad.bandwidth_gbs = -3;
  EXPECT_THAT(ApplyOverrides(bad, *hw).message(), HasSubstr("--bandwidth-gbs"));
  bad = {};
  bad.int8_tops = std::numeric_limits<double>::infinity();
  EXPECT_THAT(ApplyOverrides(bad, *hw).message(), HasSubstr("--int8-tops"));
  bad = {};
  bad.devices_per_node = 0;
  EXPECT_THAT(ApplyOverrides(bad, *hw).message(), HasSubstr("--devices-per-node"));
}

TEST(OverridesTest, AProfileWithoutMemoryNeedsTheFlag) {
  auto hw = ParseCpuProfile(R"({"machine": {"threads": 2, "read_bandwidth_gbs": 10,
                               "int8_peak_gops": 1, "fp32_peak_gflops": 1}})",
                            "old.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_THAT(ApplyOverrides({}, *hw).message(), HasSubstr("--memory-gib"));
  HardwareOverrides o;
  o.memory_gib = 8;
  EXPECT_TRUE(ApplyOverrides(o, *hw).ok());
}

}  // namespace
}  // namespace swiftlet::plan
