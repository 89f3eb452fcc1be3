#include "engine/stop_matcher.h"

#include <algorithm>
#include <utility>

#include "core/check.h"
#include "core/str_cat.h"
#include "text/utf8.h"

namespace swiftlet {
namespace {

std::vector<uint32_t> FailureFunction(std::string_view s) {
  std::vector<uint32_t> fail(s.size(), 0);
  uint32_t k = 0;
  for (size_t i = 1; i < s.size(); ++i) {
    while (k > 0 && s[i] != s[k]) k = fail[k - 1];
    if (s[i] == s[k]) ++k;
    fail[i] = k;
  }
  return fail;
}

}  // namespace

absl::Status StopMatcher::Validate(const std::vector<std::string>& stops) {
  if (stops.size() > kMaxStops) {
    return absl::InvalidArgumentError(
        StrCat("stop: at most ", kMaxStops, " stop strings, got ", stops.size()));
  }
  for (size_t i = 0; i < stops.size(); ++i) {
    const std::string& s = stops[i];
    if (s.empty()) return absl::InvalidArgumentError(StrCat("stop[", i, "]: must not be empty"));
    if (s.size() > kMaxStopBytes) {
      return absl::InvalidArgumentError(StrCat("stop[", i, "]: ", s.size(),
                                               " bytes, at most ", kMaxStopBytes));
    }
    if (!IsValidUtf8(s)) {
      return absl::InvalidArgumentError(StrCat("stop[", i, "]: not valid UTF-8"));
    }
  }
  return absl::OkStatus();
}

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  SWIFTLET_CHECK(Validate(stops).ok());
  stops_.reserve(stops.size());
  for (std::string& s : stops) {
    Stop stop;
    stop.failure = FailureFunction(s);
    stop.text = std::move(s);
    stops_.push_back(std::move(stop));
  }
}

StopMatcher::Result StopMatcher::Push(std::string_view text) {
  Result result;
  if (stopped_) {
    result.stopped = true;
    return result;
  }
  // Every partial match lies inside held_ (each automaton's state is at
  // most held_.size()), so scanning only the new bytes is enough.
  const size_t start = held_.size();
  held_.append(text);
  for (size_t i = start; i < held_.size(); ++i) {
    const char c = held_[i];
    size_t completed = 0;  // Length of the longest stop ending at byte i.
    for (Stop& stop : stops_) {
      uint32_t m = stop.matched;
      while (m > 0 && stop.text[m] != c) m = stop.failure[m - 1];
      if (stop.text[m] == c) ++m;
      if (m == stop.text.size()) {
        completed = std::max(completed, stop.text.size());
        m = stop.failure[m - 1];  // Unused after a stop; keeps the state valid.
      }
      stop.matched = m;
    }
    if (completed > 0) {
      const size_t end = i + 1;
      SWIFTLET_CHECK(end >= completed);
      held_.resize(end - completed);
      result.emit = std::move(held_);
      result.stopped = true;
      held_.clear();
      stopped_ = true;
      return result;
    }
  }
  size_t keep = 0;
  for (const Stop& stop : stops_) keep = std::max<size_t>(keep, stop.matched);
  SWIFTLET_CHECK(keep <= held_.size());
  result.emit.assign(held_, 0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return result;
}

std::string StopMatcher::Flush() {
  if (stopped_) return {};
  for (Stop& stop : stops_) stop.matched = 0;
  return std::exchange(held_, {});
}

}  // namespace swiftlet
