#include "core/async_line_writer.h"

#include <limits.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace swiftlet {

AsyncLineWriter::AsyncLineWriter(int fd, size_t max_queued_bytes, std::chrono::milliseconds flush)
    : fd_(fd), max_queued_bytes_(max_queued_bytes), flush_(flush) {
  thread_ = std::thread([this] { Loop(); });
}

AsyncLineWriter::~AsyncLineWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool AsyncLineWriter::Write(std::string line) {
  line += '\n';
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ < 0 || stop_ || queued_bytes_ + line.size() > max_queued_bytes_) {
      ++dropped_;
      return false;
    }
    queued_bytes_ += line.size();
    queue_.push_back(std::move(line));
  }
  wake_.notify_one();
  return true;
}

uint64_t AsyncLineWriter::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

uint64_t AsyncLineWriter::written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return written_;
}

void AsyncLineWriter::Loop() {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::time_point::max();
  while (true) {
    std::string line;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_ && deadline == Clock::time_point::max()) deadline = Clock::now() + flush_;
      if (queue_.empty()) return;
      line = std::move(queue_.front());
      queue_.pop_front();
      queued_bytes_ -= line.size();
    }
    const bool ok = WriteOut(line, deadline);
    std::lock_guard<std::mutex> lock(mu_);
    if (ok) {
      ++written_;
    } else {
      // Past the shutdown deadline (or a broken descriptor): what is left
      // will not be written either.
      dropped_ += 1 + queue_.size();
      queue_.clear();
      queued_bytes_ = 0;
      if (stop_) return;
    }
  }
}

bool AsyncLineWriter::WriteOut(const std::string& line, std::chrono::steady_clock::time_point& deadline) {
  size_t done = 0;
  while (done < line.size()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_ && deadline == std::chrono::steady_clock::time_point::max()) {
        deadline = std::chrono::steady_clock::now() + flush_;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    pollfd p{fd_, POLLOUT, 0};
    const int ready = ::poll(&p, 1, kPollMs);
    if (ready < 0 && errno == EINTR) continue;
    // A pipe whose reader is gone (POLLHUP) would answer with SIGPIPE.
    if (ready < 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return false;
    if (ready == 0) continue;
    // POLLOUT on a pipe promises room for PIPE_BUF bytes: a write of at
    // most that never blocks.
    const size_t n = std::min<size_t>(line.size() - done, PIPE_BUF);
    const ssize_t w = ::write(fd_, line.data() + done, n);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

}  // namespace swiftlet
