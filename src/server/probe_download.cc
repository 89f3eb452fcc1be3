#include "server/probe_download.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "api/errors.h"
#include "core/str_cat.h"
#include "server/error_response.h"

namespace swiftlet::server {
namespace {

constexpr size_t kLowWater = 512 << 10;
constexpr size_t kHighWater = 1 << 20;
constexpr size_t kPiece = 64 << 10;

// Filler that does not compress to nothing, should a proxy on the way
// compress: a fixed pseudo-random block, the same for every download.
const std::string& Filler() {
  static const std::string block = [] {
    std::string b(kPiece, '\0');
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (char& c : b) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      c = static_cast<char>('a' + x % 26);
    }
    return b;
  }();
  return block;
}

std::optional<uint64_t> BytesParam(std::string_view query) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (!pair.starts_with("bytes=")) continue;
    const std::string_view v = pair.substr(6);
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
    return n;
  }
  return std::nullopt;
}

}  // namespace

ProbeDownloads::ProbeDownloads(size_t max_downloads)
    : max_downloads_(max_downloads), pacer_([this] { Run(); }) {}

ProbeDownloads::~ProbeDownloads() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  pacer_.join();
}

void ProbeDownloads::Handle(const http::HttpRequest& request, std::shared_ptr<http::ResponseWriter> writer) {
  const std::optional<uint64_t> bytes = BytesParam(request.query);
  if (!bytes.has_value() || *bytes < 1 || *bytes > kMaxBytes) {
    RespondError(*writer, api::InvalidParam("bytes", StrCat("give bytes=N with N in 1..", kMaxBytes)));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (downloads_.size() >= max_downloads_) {
      RespondError(*writer,
                   api::WithErrorCode(absl::ResourceExhaustedError(StrCat(
                                          "at most ", max_downloads_, " probe downloads run at once; retry")),
                                      "downloads_busy"),
                   http::Headers{{"Retry-After", "1"}});
      return;
    }
    if (!writer->StartStream(200, http::Headers{{"Content-Type", "application/octet-stream"},
                                                {"Cache-Control", "no-store"},
                                                {"x-probe-bytes", StrCat(*bytes)}})) {
      return;
    }
    downloads_.push_back({std::move(writer), *bytes});
  }
  cv_.notify_all();
}

void ProbeDownloads::Run() {
  const std::string& filler = Filler();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (downloads_.empty()) {
      cv_.wait(lock, [this] { return stop_ || !downloads_.empty(); });
      continue;
    }
    for (auto it = downloads_.begin(); it != downloads_.end();) {
      http::ResponseWriter& w = *it->writer;
      if (w.buffered_bytes() < kLowWater) {
        // Up to the high-water mark: past the writer's soft limit on purpose
        // (it still queues), below its hard limit.
        while (it->left > 0 && !w.cancelled() && w.buffered_bytes() < kHighWater) {
          const size_t n = static_cast<size_t>(std::min<uint64_t>(it->left, filler.size()));
          w.Write(std::string_view(filler).substr(0, n));
          it->left -= n;
        }
      }
      if (w.cancelled()) {
        it = downloads_.erase(it);
      } else if (it->left == 0) {
        w.End();
        it = downloads_.erase(it);
      } else {
        ++it;
      }
    }
    cv_.wait_for(lock, std::chrono::milliseconds(1), [this] { return stop_; });
  }
  // Unfinished downloads are dropped: releasing a started writer closes
  // its connection, so no client takes a short body for a whole one.
  downloads_.clear();
}

}  // namespace swiftlet::server
