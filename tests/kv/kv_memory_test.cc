#include "kv/kv_memory.h"

#include <gtest/gtest.h>

namespace swiftlet {
namespace {

TEST(KvMemoryTest, FortyPercentOfMemAvailable) {
  const char* meminfo =
      "MemTotal:       32000000 kB\n"
      "MemFree:         1000000 kB\n"
      "MemAvailable:   10000000 kB\n"
      "Buffers:          100000 kB\n";
  // 10,000,000 KiB = 10,240,000,000 bytes; 40% = 4,096,000,000.
  EXPECT_EQ(KvMemoryBytesFromMeminfo(meminfo), 4096000000ull);
}

TEST(KvMemoryTest, FloorAndCap) {
  EXPECT_EQ(KvMemoryBytesFromMeminfo("MemAvailable: 1000 kB\n"), uint64_t{64} << 20);
  EXPECT_EQ(KvMemoryBytesFromMeminfo("MemAvailable: 1000000000 kB\n"), uint64_t{32} << 30);
  EXPECT_EQ(KvMemoryBytesFromMeminfo("MemAvailable: 99999999999999999999999 kB\n"),
            uint64_t{64} << 20);  // Unparsable number.
}

TEST(KvMemoryTest, UnreadableTextGivesTheFloor) {
  EXPECT_EQ(KvMemoryBytesFromMeminfo(""), uint64_t{64} << 20);
  EXPECT_EQ(KvMemoryBytesFromMeminfo("MemAvailable: lots\n"), uint64_t{64} << 20);
  EXPECT_EQ(KvMemoryBytesFromMeminfo("MemAvailable: 10000000 MB\n"), uint64_t{64} << 20);
  // Only a key at the start of a line counts.
  EXPECT_EQ(KvMemoryBytesFromMeminfo("XMemAvailable: 10000000 kB\n"), uint64_t{64} << 20);
}

TEST(KvMemoryTest, AGpuKeepsATenthOrAGibibyteFree) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  // An H200 (about 139 GiB usable) with 4 GiB of weights: a tenth kept.
  EXPECT_EQ(KvMemoryBytesForGpu(135 * kGiB, 139 * kGiB), 135 * kGiB - 139 * kGiB / 10);
  // A 8 GiB card: a tenth is under 1 GiB, so 1 GiB is kept.
  EXPECT_EQ(KvMemoryBytesForGpu(6 * kGiB, 8 * kGiB), 5 * kGiB);
  // Less free than the reserve, or nothing: the floor.
  EXPECT_EQ(KvMemoryBytesForGpu(kGiB / 2, 8 * kGiB), uint64_t{64} << 20);
  EXPECT_EQ(KvMemoryBytesForGpu(0, 0), uint64_t{64} << 20);
  // Just above the reserve: never less than the floor.
  EXPECT_EQ(KvMemoryBytesForGpu(kGiB + 1, 8 * kGiB), uint64_t{64} << 20);
}

TEST(KvMemoryTest, ThisMachineIsWithinBounds) {
  const uint64_t bytes = DefaultKvMemoryBytes();
  EXPECT_GE(bytes, uint64_t{64} << 20);
  EXPECT_LE(bytes, uint64_t{32} << 30);
}

}  // namespace
}  // namespace swiftlet
