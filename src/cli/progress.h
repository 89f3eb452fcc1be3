// A progress line for long work on the command line (model load and
// repack, quantize): on a terminal, one line on stderr redrawn in place at
// most ten times a second and ended by Finish; when stderr is not a
// terminal (a log file, a pipe, a test, systemd's journal) nothing at all,
// so logs carry results, not a stream of carriage returns.
//
// One thread updates a ProgressLine.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace swiftlet::cli {

// True when `f` is a terminal that can redraw a line (not TERM=dumb).
bool IsTerminal(std::FILE* f);

class ProgressLine {
 public:
  // Shown when `out` is a terminal.
  explicit ProgressLine(std::string label, std::FILE* out = stderr);
  // Shown when `enabled` (tests pass a file and true).
  ProgressLine(std::string label, std::FILE* out, bool enabled);
  ~ProgressLine();  // Finishes a line that was drawn.
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // `done` of `total` units (total 0: unknown). Draws when enabled and
  // either 100 ms passed since the last draw or the work is complete.
  void Update(int64_t done, int64_t total, std::string_view detail = {});
  // Draws the last state and ends the line; later calls do nothing.
  void Finish();

  bool enabled() const { return enabled_; }

 private:
  void Draw();

  std::string label_;
  std::FILE* out_;
  bool enabled_;
  bool drawn_ = false;
  bool finished_ = false;
  int64_t done_ = 0, total_ = 0;
  std::string detail_;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace swiftlet::cli
