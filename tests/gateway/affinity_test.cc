#include "gateway/affinity.h"

#include <string>

#include <gtest/gtest.h>

namespace swiftlet::gateway {
namespace {

TEST(AffinityMap, RemembersAndForgetsAfterTheTtl) {
  AffinityMap m(10, 1000);
  m.Pin("s1", "hk", 0);
  EXPECT_EQ(m.Find("s1", 500), "hk");
  EXPECT_EQ(m.Find("s1", 1400), "hk");  // The find at 500 refreshed it.
  EXPECT_FALSE(m.Find("s1", 2401).has_value());
  EXPECT_EQ(m.size(), 0u);
}

TEST(AffinityMap, RepinMoves) {
  AffinityMap m(10, 1000);
  m.Pin("s1", "hk", 0);
  m.Pin("s1", "sg", 1);
  EXPECT_EQ(m.Find("s1", 2), "sg");
  EXPECT_EQ(m.size(), 1u);
}

TEST(AffinityMap, BoundedLeastRecentlyUsedFirst) {
  AffinityMap m(3, 1'000'000);
  m.Pin("a", "x", 0);
  m.Pin("b", "x", 1);
  m.Pin("c", "x", 2);
  ASSERT_TRUE(m.Find("a", 3).has_value());  // a is now the most recent.
  m.Pin("d", "x", 4);                        // b goes.
  EXPECT_EQ(m.size(), 3u);
  EXPECT_FALSE(m.Find("b", 5).has_value());
  EXPECT_TRUE(m.Find("a", 5).has_value());
  EXPECT_TRUE(m.Find("c", 5).has_value());
  EXPECT_TRUE(m.Find("d", 5).has_value());
}

TEST(AffinityMap, HugeOrEmptyIdsAreNotKept) {
  AffinityMap m(3, 1000);
  m.Pin(std::string(kMaxStreamIdBytes + 1, 'x'), "hk", 0);
  m.Pin("", "hk", 0);
  EXPECT_EQ(m.size(), 0u);
}

}  // namespace
}  // namespace swiftlet::gateway
