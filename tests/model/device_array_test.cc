#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/backend.h"
#include "model/forward_state.h"

namespace swiftlet {
namespace {

TEST(DeviceArrayTest, GrowsByHalfAgainSoAGrowingTableRarelyMoves) {
  const std::unique_ptr<Backend> backend = MakeCpuBackend(1);
  DeviceArray<int32_t> array;
  ASSERT_TRUE(array.Reserve(*backend, 100).ok());
  EXPECT_EQ(array.capacity(), 100u);  // The first step gets what it asks for.
  int32_t* first = array.data();
  ASSERT_TRUE(array.Reserve(*backend, 60).ok());
  EXPECT_EQ(array.data(), first);  // Smaller steps reuse it.

  ASSERT_TRUE(array.Reserve(*backend, 101).ok());
  EXPECT_EQ(array.capacity(), 150u);
  // A decode's block table gains one entry a block: 49 more fit, and the
  // buffer (the pointer a CUDA graph holds) stays where it is.
  int32_t* grown = array.data();
  for (int64_t count = 102; count <= 150; ++count) {
    ASSERT_TRUE(array.Reserve(*backend, count).ok());
    ASSERT_EQ(array.data(), grown) << count;
  }
  ASSERT_TRUE(array.Reserve(*backend, 151).ok());
  EXPECT_EQ(array.capacity(), 225u);

  // A step far larger than half again gets exactly its size.
  ASSERT_TRUE(array.Reserve(*backend, 1000).ok());
  EXPECT_EQ(array.capacity(), 1000u);
  array.data()[999] = 7;  // The whole of it is usable (ASan checks).
  EXPECT_EQ(array.data()[999], 7);
}

}  // namespace
}  // namespace swiftlet
