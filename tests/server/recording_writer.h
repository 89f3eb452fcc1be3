// A ResponseWriter that records what a handler sent, for tests of the
// server's handlers without sockets. It follows the writer's contract
// (http/response_writer.h): one Respond or StartStream, then Write/WriteEvent,
// then End; out-of-order calls return false.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "http/response_writer.h"

namespace swiftlet::server {

class RecordingWriter final : public http::ResponseWriter {
 public:
  bool Respond(int status, http::Headers headers, std::string body) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_ || closed_) return false;
    started_ = finished_ = true;
    status_ = status;
    headers_ = std::move(headers);
    body_ = std::move(body);
    return true;
  }
  bool StartStream(int status, http::Headers headers) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_ || closed_) return false;
    started_ = streaming_ = true;
    status_ = status;
    headers_ = std::move(headers);
    return true;
  }
  bool Write(std::string_view data) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!streaming_ || finished_ || closed_) return false;
    body_.append(data);
    return true;
  }
  bool WriteEvent(std::string_view data) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!streaming_ || finished_ || closed_) return false;
    events_.emplace_back(data);
    return true;
  }
  bool End() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!streaming_ || finished_ || closed_) return false;
    finished_ = true;
    return true;
  }
  void OnClose(std::function<void()> callback) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (closed_) {
      lock.unlock();
      callback();
      return;
    }
    callbacks_.push_back(std::move(callback));
  }
  bool cancelled() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }
  size_t buffered_bytes() const override { return 0; }

  // The client goes away: close callbacks run (unless already finished).
  void Disconnect() {
    std::vector<std::function<void()>> run;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_ || closed_) return;
      closed_ = true;
      run.swap(callbacks_);
    }
    for (auto& c : run) c();
  }

  int status() const { std::lock_guard<std::mutex> l(mu_); return status_; }
  http::Headers headers() const { std::lock_guard<std::mutex> l(mu_); return headers_; }
  std::string body() const { std::lock_guard<std::mutex> l(mu_); return body_; }
  std::vector<std::string> events() const { std::lock_guard<std::mutex> l(mu_); return events_; }
  bool finished() const { std::lock_guard<std::mutex> l(mu_); return finished_; }
  bool streaming() const { std::lock_guard<std::mutex> l(mu_); return streaming_; }

 private:
  mutable std::mutex mu_;
  bool started_ = false, streaming_ = false, finished_ = false, closed_ = false;
  int status_ = 0;
  http::Headers headers_;
  std::string body_;
  std::vector<std::string> events_;
  std::vector<std::function<void()>> callbacks_;
};

}  // namespace swiftlet::server
