// Stop strings over streamed output text.
//
// The engine pushes each piece of text the incremental detokenizer releases;
// StopMatcher answers with the text that is safe to send now and whether a
// stop string has completed. Text that might still turn out to be the start
// of a stop string is held back (the longest suffix of the unsent text that
// is a proper prefix of some stop string), so a stop string split over any
// number of tokens is still caught and nothing sent is ever retracted.
//
// Which stop wins: generation stops at the first byte of output at which any
// stop string is complete (the earliest end). If several end at that byte,
// the longest wins, so the least text is emitted. Emitted text is then the
// output before that occurrence; the stop string and anything after it are
// never emitted. This differs from "earliest start" only when one stop
// string occurs strictly inside another (stops "abcd" and "bc" on "abcd"
// stop after "abc" and emit "a"): a stop string that has appeared ends the
// output at once rather than waiting to see whether a longer one completes.
//
// Stop strings must be valid UTF-8 (Validate). With valid UTF-8 input, held
// text and every match then start on a character boundary, so each emitted
// piece is whole characters.
//
// Cost: per Push, O(len(text) * stops) amortized (one Knuth-Morris-Pratt
// automaton per stop string) plus copying the held text, at most 255 bytes.
//
// Not thread-safe: one instance per output stream (choice).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace swiftlet {

class StopMatcher {
 public:
  static constexpr size_t kMaxStops = 16;
  static constexpr size_t kMaxStopBytes = 256;

  struct Result {
    std::string emit;      // Safe to send now.
    bool stopped = false;  // A stop string completed: the stream is done.
  };

  // InvalidArgument naming the problem: more than kMaxStops strings, or one
  // that is empty, longer than kMaxStopBytes or not valid UTF-8.
  static absl::Status Validate(const std::vector<std::string>& stops);

  // `stops` must pass Validate (checked). No stops: every Push emits its
  // text as is.
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends newly decoded output text. Once stopped, further pushes return
  // {"", true}.
  Result Push(std::string_view text);

  // End of generation (length, end of sequence): returns the held text.
  // Returns "" once stopped. After a Flush (without a stop) the matcher
  // starts over: a later Push begins a new stream.
  std::string Flush();

  bool stopped() const { return stopped_; }
  // Bytes held back now.
  size_t held_bytes() const { return held_.size(); }

 private:
  struct Stop {
    std::string text;
    std::vector<uint32_t> failure;  // KMP failure function of text.
    uint32_t matched = 0;           // Longest suffix of output that is a prefix of text.
  };

  std::vector<Stop> stops_;
  std::string held_;  // Unsent output; holds every partial match.
  bool stopped_ = false;
};

}  // namespace swiftlet
