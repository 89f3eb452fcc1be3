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

TEST(KvMemoryTest, ThisMachineIsWithinBounds) {
  const uint64_t bytes = DefaultKvMemoryBytes();
  EXPECT_GE(bytes, uint64_t{64} << 20);
  EXPECT_LE(bytes, uint64_t{32} << 30);
}

}  // namespace
}  // namespace swiftlet
