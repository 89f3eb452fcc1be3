#include "core/huge_page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace swiftlet {
namespace {

bool HugePageAligned(const uint8_t* p) { return reinterpret_cast<uintptr_t>(p) % kHugePageBytes == 0; }

TEST(HugePageBufferTest, RoundsUpToWholeAlignedZeroedPages) {
  for (size_t bytes : {size_t{1}, kHugePageBytes, kHugePageBytes + 1, size_t{5} << 20}) {
    absl::StatusOr<HugePageBuffer> b = HugePageBuffer::Allocate(bytes);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->size(), (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes) << bytes;
    EXPECT_TRUE(HugePageAligned(b->data())) << bytes;
    // Every byte of the rounded size is there, zeroed and writable.
    for (size_t i = 0; i < b->size(); i += 4096) {
      ASSERT_EQ(b->data()[i], 0) << i;
      b->data()[i] = static_cast<uint8_t>(i / 4096);
    }
    b->data()[b->size() - 1] = 7;
    EXPECT_EQ(b->data()[4096], 1);
  }
}

TEST(HugePageBufferTest, EmptyAndImpossibleSizes) {
  absl::StatusOr<HugePageBuffer> empty = HugePageBuffer::Allocate(0);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->data(), nullptr);
  EXPECT_EQ(empty->size(), 0u);
  // More address space than x86-64 has: an error, not an abort.
  absl::StatusOr<HugePageBuffer> huge = HugePageBuffer::Allocate(SIZE_MAX / 2);
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  absl::StatusOr<HugePageBuffer> too_big = HugePageBuffer::Allocate(size_t{1} << 60);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(HugePageBufferTest, MovesOwnership) {
  absl::StatusOr<HugePageBuffer> a = HugePageBuffer::Allocate(100);
  ASSERT_TRUE(a.ok());
  uint8_t* p = a->data();
  p[0] = 42;
  HugePageBuffer b = *std::move(a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[0], 42);
  HugePageBuffer c;
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(b.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is the contract.
  EXPECT_EQ(b.size(), 0u);
}

// The setting in brackets in /sys/kernel/mm/transparent_hugepage/enabled.
std::string TransparentHugePageMode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(f, line);
  const size_t open = line.find('['), close = line.find(']');
  return open == std::string::npos || close == std::string::npos ? "" : line.substr(open + 1, close - open - 1);
}

// The smaps "THPeligible" value of the mapping that holds p, or -1.
int ThpEligible(const uint8_t* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &lo, &hi) == 2 && line.find(':') > line.find('-')) {
      inside = addr >= lo && addr < hi;
      continue;
    }
    int v = 0;
    if (inside && std::sscanf(line.c_str(), "THPeligible: %d", &v) == 1) return v;
  }
  return -1;
}

TEST(HugePageBufferTest, AsksForHugePagesWhereTheKernelOffersThem) {
  const std::string mode = TransparentHugePageMode();
  if (mode != "always" && mode != "madvise") {
    GTEST_SKIP() << "transparent huge pages are '" << mode << "' here: nothing to ask for";
  }
  absl::StatusOr<HugePageBuffer> b = HugePageBuffer::Allocate(3 * kHugePageBytes);
  ASSERT_TRUE(b.ok());
  // Under "madvise" only the advice makes the mapping eligible.
  EXPECT_EQ(ThpEligible(b->data()), 1) << "mode " << mode;
}

}  // namespace
}  // namespace swiftlet
