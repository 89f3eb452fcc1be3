#include "core/mapped_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

namespace swiftlet {
namespace {

TEST(MappedFileTest, DroppedPagesReadBackFromTheFile) {
  const std::string path = ::testing::TempDir() + "/mapped_file_test.bin";
  std::vector<char> bytes(3 * 4096 + 123);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + 3);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  auto m = MappedFile::Open(path);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::span<const uint8_t> view = (*m)->bytes();
  ASSERT_EQ(view.size(), bytes.size());
  (*m)->DropPages(view.data() + 100, view.size() - 200);
  (*m)->DropPages(view.data(), view.size() + 1);  // outside: ignored
  for (size_t i = 0; i < bytes.size(); ++i) ASSERT_EQ(view[i], static_cast<uint8_t>(bytes[i])) << i;
}

}  // namespace
}  // namespace swiftlet
