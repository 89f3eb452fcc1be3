// A RequestQueue that accepts every request and records what is cancelled,
// for tests of the server's calls without an engine.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "engine/request.h"

namespace swiftlet::server {

class RecordingQueue final : public RequestQueue {
 public:
  SubmitResult Submit(Request) override { return {}; }
  void Cancel(uint64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled.push_back(id);
  }
  std::mutex mu_;
  std::vector<uint64_t> cancelled;
};

}  // namespace swiftlet::server
