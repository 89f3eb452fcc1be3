#include "http/sse_parser.h"

#include "core/str_cat.h"

namespace swiftlet::http {
namespace {
constexpr std::string_view kBom = "\xEF\xBB\xBF";
}  // namespace

SseParser::SseParser(size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}

absl::Status SseParser::Feed(std::string_view bytes,
                             const std::function<void(const SseEvent&)>& on_event) {
  if (!status_.ok()) return status_;
  // A leading BOM may itself arrive split; hold its prefix until decided.
  while (at_start_ && !bytes.empty()) {
    if (bytes.front() == kBom[bom_matched_]) {
      bytes.remove_prefix(1);
      if (++bom_matched_ == kBom.size()) at_start_ = false;
      continue;
    }
    at_start_ = false;
    line_.append(kBom.substr(0, bom_matched_));  // Not a BOM after all.
  }
  while (!bytes.empty()) {
    if (after_cr_) {
      after_cr_ = false;
      if (bytes.front() == '\n') {
        bytes.remove_prefix(1);
        continue;
      }
    }
    size_t end = bytes.find_first_of("\r\n");
    std::string_view piece = bytes.substr(0, end);
    if (line_.size() + piece.size() + event_.data.size() > max_event_bytes_) {
      status_ = absl::ResourceExhaustedError(
          StrCat("server-sent event larger than ", max_event_bytes_, " bytes"));
      return status_;
    }
    line_.append(piece);
    if (end == std::string_view::npos) break;
    after_cr_ = bytes[end] == '\r';
    bytes.remove_prefix(end + 1);
    ProcessLine(on_event);
  }
  return absl::OkStatus();
}

void SseParser::ProcessLine(const std::function<void(const SseEvent&)>& on_event) {
  std::string_view line = line_;
  if (line.empty()) {
    if (has_data_) {
      if (!event_.data.empty() && event_.data.back() == '\n') event_.data.pop_back();
      on_event(event_);
    }
    event_.event.clear();
    event_.data.clear();
    has_data_ = false;  // The id persists across events, as in the spec.
  } else if (line.front() != ':') {
    size_t colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value;
    if (colon != std::string_view::npos) {
      value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      event_.data.append(value);
      event_.data.push_back('\n');
      has_data_ = true;
    } else if (field == "event") {
      event_.event = std::string(value);
    } else if (field == "id") {
      if (value.find('\0') == std::string_view::npos) event_.id = std::string(value);
    }
  }
  line_.clear();
}

}  // namespace swiftlet::http
