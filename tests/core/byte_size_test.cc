#include "core/byte_size.h"

#include <gtest/gtest.h>

namespace swiftlet {
namespace {

TEST(ByteSizeTest, BinaryAndDecimalUnits) {
  EXPECT_EQ(*ParseByteSize("0"), 0u);
  EXPECT_EQ(*ParseByteSize("4096"), 4096u);
  EXPECT_EQ(*ParseByteSize("12B"), 12u);
  EXPECT_EQ(*ParseByteSize("64KiB"), 64u * 1024);
  EXPECT_EQ(*ParseByteSize("512MiB"), 512ull * 1024 * 1024);
  EXPECT_EQ(*ParseByteSize("2GiB"), 2ull * 1024 * 1024 * 1024);
  EXPECT_EQ(*ParseByteSize("1.5GiB"), 3ull * 512 * 1024 * 1024);
  EXPECT_EQ(*ParseByteSize("1TiB"), 1ull << 40);
  EXPECT_EQ(*ParseByteSize("3KB"), 3000u);
  EXPECT_EQ(*ParseByteSize("1GB"), 1000000000u);
}

TEST(ByteSizeTest, RejectsWhatIsNotASize) {
  for (const char* text : {"", "GiB", "-1GiB", "2gib", "2 GiB", "1.5", "1e3", "2XB", "2048TiB", "."}) {
    auto r = ParseByteSize(text);
    EXPECT_FALSE(r.ok()) << text;
    if (!r.ok()) {
      EXPECT_NE(std::string(r.status().message()).find("size '"), std::string::npos) << text;
    }
  }
}

}  // namespace
}  // namespace swiftlet
