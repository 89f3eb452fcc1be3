#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace swiftlet::cli {

bool IsTerminal(std::FILE* f) {
  if (f == nullptr || ::isatty(::fileno(f)) == 0) return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

ProgressLine::ProgressLine(std::string label, std::FILE* out) : ProgressLine(std::move(label), out, IsTerminal(out)) {}

ProgressLine::ProgressLine(std::string label, std::FILE* out, bool enabled)
    : label_(std::move(label)), out_(out), enabled_(enabled) {}

ProgressLine::~ProgressLine() {
  if (drawn_) Finish();
}

void ProgressLine::Update(int64_t done, int64_t total, std::string_view detail) {
  if (!enabled_ || finished_) return;
  done_ = done;
  total_ = total;
  detail_.assign(detail);
  const auto now = std::chrono::steady_clock::now();
  const bool complete = total > 0 && done >= total;
  if (!drawn_ || complete || now - last_draw_ >= std::chrono::milliseconds(100)) {
    last_draw_ = now;
    Draw();
  }
}

void ProgressLine::Finish() {
  if (!enabled_ || finished_) return;
  Draw();
  std::fputc('\n', out_);
  std::fflush(out_);
  finished_ = true;
}

void ProgressLine::Draw() {
  constexpr int kWidth = 24;
  std::string bar;
  if (total_ > 0) {
    const int64_t done = std::clamp<int64_t>(done_, 0, total_);
    const int filled = static_cast<int>(kWidth * done / total_);
    bar = std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(kWidth - filled), '.');
    std::fprintf(out_, "\r\033[K%s [%s] %3d%% %s", label_.c_str(), bar.c_str(),
                 static_cast<int>(100 * done / total_), detail_.c_str());
  } else {
    std::fprintf(out_, "\r\033[K%s %s", label_.c_str(), detail_.c_str());
  }
  std::fflush(out_);
  drawn_ = true;
}

}  // namespace swiftlet::cli
