// Lines written to a file descriptor by a thread of their own, so the
// threads that produce them (the engine's, the I/O threads) never wait on
// the descriptor: a stderr pipe nobody reads must not stall decoding.
//
// The queue is bounded by bytes; a line that does not fit is dropped and
// counted (the log is best effort, the engine is not). The writer waits for
// the descriptor with poll and writes at most PIPE_BUF bytes at a time, so
// it never blocks in write() on a pipe and a stop is noticed within
// kPollMs. On destruction it writes what is queued for up to `flush` and
// counts the rest as dropped.
//
// Thread-safe: Write and dropped from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"

namespace swiftlet {

class AsyncLineWriter {
 public:
  static constexpr int kPollMs = 50;

  // `fd` is not owned (stderr's, say); -1 discards everything.
  explicit AsyncLineWriter(int fd, size_t max_queued_bytes = size_t{1} << 20,
                           std::chrono::milliseconds flush = std::chrono::milliseconds(1000));
  ~AsyncLineWriter();

  AsyncLineWriter(const AsyncLineWriter&) = delete;
  AsyncLineWriter& operator=(const AsyncLineWriter&) = delete;

  // Queues `line` (a newline is added); false when it was dropped.
  bool Write(std::string line);

  // Lines dropped so far: the queue was full, or the writer gave up on them
  // at shutdown or after a write error.
  uint64_t dropped() const;
  // Lines handed to the descriptor so far.
  uint64_t written() const;

 private:
  void Loop();
  // Writes `line` whole; false when it could not be (a broken descriptor,
  // or `deadline` passed: it is set once a stop is seen).
  bool WriteOut(const std::string& line, std::chrono::steady_clock::time_point& deadline);

  const int fd_;
  const size_t max_queued_bytes_;
  const std::chrono::milliseconds flush_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t written_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace swiftlet
