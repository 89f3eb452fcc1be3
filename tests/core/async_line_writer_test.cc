#include "core/async_line_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace swiftlet {
namespace {

struct Pipe {
  Pipe() { EXPECT_EQ(::pipe(fds), 0); }
  ~Pipe() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  int fds[2] = {-1, -1};
};

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(AsyncLineWriterTest, LinesArriveWholeAndInOrder) {
  Pipe p;
  std::string got;
  std::thread reader([&] { got = ReadAll(p.fds[0]); });
  std::string want;
  {
    AsyncLineWriter w(p.fds[1], size_t{16} << 20);
    for (int i = 0; i < 3000; ++i) {
      // Lines longer than PIPE_BUF too: written in pieces, still whole.
      std::string line = "line " + std::to_string(i) + " " + std::string(static_cast<size_t>(i % 7) * 1000, 'x');
      want += line + "\n";
      ASSERT_TRUE(w.Write(std::move(line)));
    }
  }  // The destructor flushes what is queued.
  ::close(p.fds[1]);
  p.fds[1] = -1;
  reader.join();
  EXPECT_EQ(got, want);
}

// Nobody reads the pipe: writers must not wait for it. Lines past the pipe's
// buffer and the queue are dropped and counted, and the writer still shuts
// down (the test would hang otherwise).
TEST(AsyncLineWriterTest, AnUnreadPipeDropsInsteadOfBlocking) {
  Pipe p;
  constexpr int kLines = 20000;
  uint64_t dropped = 0;
  {
    AsyncLineWriter w(p.fds[1], size_t{16} << 10, std::chrono::milliseconds(100));
    int accepted = 0;
    for (int i = 0; i < kLines; ++i) accepted += w.Write(std::string(200, 'a'));
    dropped = w.dropped();
    EXPECT_EQ(dropped, static_cast<uint64_t>(kLines - accepted));
    EXPECT_GT(dropped, 0u);
    EXPECT_LT(w.written(), static_cast<uint64_t>(kLines));
  }
  // What did get through is whole lines (the pipe buffer holds them).
  const int flags = ::fcntl(p.fds[0], F_GETFL);
  ASSERT_EQ(::fcntl(p.fds[0], F_SETFL, flags | O_NONBLOCK), 0);
  const std::string got = ReadAll(p.fds[0]);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.size() % 201, 0u);
  EXPECT_EQ(got.back(), '\n');
}

TEST(AsyncLineWriterTest, NoDescriptorDropsEverything) {
  AsyncLineWriter w(-1);
  EXPECT_FALSE(w.Write("x"));
  EXPECT_FALSE(w.Write("y"));
  EXPECT_EQ(w.dropped(), 2u);
}

}  // namespace
}  // namespace swiftlet
