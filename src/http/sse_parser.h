// Incremental parser for a text/event-stream body (the WHATWG
// Server-Sent Events format), fed bytes as they arrive in any split.
//
// Lines end in \r\n, \n or \r (a \r\n split between two Feed calls is still
// one line end). "data:" lines append to the event's data (joined by \n),
// "event:" and "id:" set those fields, ":" lines are comments, other fields
// are ignored, one space after the colon is dropped. A blank line ends the
// event; an event without data lines is not delivered (as in browsers). A
// UTF-8 byte-order mark at the very start is skipped. An incomplete event at
// the end of the stream is never delivered.
//
// Not thread-safe: one parser per stream.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace swiftlet::http {

struct SseEvent {
  std::string event;  // Empty: the default type ("message").
  std::string data;
  std::string id;

  bool operator==(const SseEvent&) const = default;
};

class SseParser {
 public:
  // `max_event_bytes` bounds one event's buffered line and data, so a
  // stream that never ends an event cannot grow memory without limit.
  explicit SseParser(size_t max_event_bytes = size_t{16} << 20);

  // Parses `bytes`, calling `on_event` for each event they complete, in
  // order. Past the size limit it returns ResourceExhausted and every later
  // call returns the same error.
  absl::Status Feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event);

 private:
  void ProcessLine(const std::function<void(const SseEvent&)>& on_event);

  size_t max_event_bytes_;
  std::string line_;
  SseEvent event_;
  bool has_data_ = false;
  bool after_cr_ = false;     // Last byte seen was \r: skip a following \n.
  bool at_start_ = true;      // No byte seen yet (for the BOM).
  size_t bom_matched_ = 0;    // Bytes of a leading BOM seen so far.
  absl::Status status_;
};

}  // namespace swiftlet::http
