// Shared set-up for the server tests: a server on an ephemeral port with
// short timeouts, worker threads the handlers may spawn (joined before the
// server goes), and a blocking wrapper around the async client.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "http/client.h"
#include "http/server.h"

namespace swiftlet::http::testing {

using namespace std::chrono_literals;

inline HttpServerOptions FastOptions() {
  HttpServerOptions o;
  o.port = 0;
  o.io_threads = 2;
  o.header_timeout = 500ms;
  o.body_timeout = 500ms;
  o.idle_timeout = 500ms;
  o.write_timeout = 2s;
  o.linger_timeout = 300ms;
  return o;
}

// Threads started by handlers; joined when the fixture ends.
class Workers {
 public:
  ~Workers() { JoinAll(); }
  void Spawn(std::function<void()> fn) {
    std::lock_guard lock(mu_);
    threads_.emplace_back(std::move(fn));
  }
  void JoinAll() {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

 private:
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

struct Fetched {
  absl::Status status;
  ClientResponse response;
  std::vector<std::string> events;
};

// Sends and waits (up to 10 s) for on_done.
inline Fetched Fetch(HttpClient& client, ClientRequest request) {
  auto result = std::make_shared<Fetched>();
  auto done = std::make_shared<std::promise<void>>();
  ClientCallbacks cb;
  cb.on_event = [result](std::string_view data) { result->events.emplace_back(data); };
  cb.on_done = [result, done](absl::Status s, ClientResponse r) {
    result->status = std::move(s);
    result->response = std::move(r);
    done->set_value();
  };
  client.Send(std::move(request), std::move(cb));
  if (done->get_future().wait_for(10s) != std::future_status::ready) {
    ADD_FAILURE() << "request did not finish";
    return Fetched{absl::DeadlineExceededError("test wait"), {}, {}};
  }
  return *result;
}

inline ClientRequest Get(std::string target) {
  ClientRequest r;
  r.method = "GET";
  r.target = std::move(target);
  return r;
}

// Polls `predicate` until true or `timeout`.
inline bool WaitFor(const std::function<bool()>& predicate, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// A counter tests can wait on.
class Counter {
 public:
  void Add() {
    std::lock_guard lock(mu_);
    ++value_;
    cv_.notify_all();
  }
  int value() {
    std::lock_guard lock(mu_);
    return value_;
  }
  bool WaitAtLeast(int n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return value_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int value_ = 0;
};

}  // namespace swiftlet::http::testing
