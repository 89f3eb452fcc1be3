#include "loadgen/workload.h"

#include <charconv>
#include <fstream>
#include <iterator>
#include <utility>

#include "api/request_codec.h"
#include "loadgen/sample_words.h"
#include "core/str_cat.h"

namespace swiftlet::loadgen {
namespace {

constexpr int64_t kMaxLength = 1'000'000;

absl::StatusOr<int64_t> ParseCount(std::string_view s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 1 || v > kMaxLength) {
    return absl::InvalidArgumentError(
        StrCat("'", s, "': expected a whole number in [1, ", kMaxLength, "]"));
  }
  return v;
}

// Request i's own generator: independent of how many draws others made.
std::mt19937_64 RngFor(uint64_t seed, int64_t index) {
  return std::mt19937_64(seed * 1000003 + static_cast<uint64_t>(index));
}

void ForceStreamAndLength(api::GenerationOptions& o, int32_t output_tokens) {
  o.max_tokens = output_tokens;
  o.min_tokens = output_tokens;
  o.ignore_eos = true;
  o.stream = true;
  o.include_usage = true;
}

class SyntheticWorkload final : public Workload {
 public:
  explicit SyntheticWorkload(WorkloadOptions o) : o_(std::move(o)) {
    if (o_.shared_prefix_words > 0) {
      std::mt19937_64 rng = RngFor(o_.seed, -1);
      shared_ = RandomWords(rng, o_.shared_prefix_words) + "\n";
    }
  }

  PlannedRequest Make(int64_t index) const override {
    std::mt19937_64 rng = RngFor(o_.seed, index);
    api::CompletionRequest r;
    r.model = o_.model;
    r.prompts.emplace_back(shared_ + RandomWords(rng, o_.prompt_words.Draw(rng)));
    const auto tokens = static_cast<int32_t>(o_.output_tokens.Draw(rng));
    ForceStreamAndLength(r.options, tokens);
    return {"/v1/completions", api::SerializeCompletionRequest(r), tokens};
  }
  std::string name() const override { return "synthetic"; }

 private:
  WorkloadOptions o_;
  std::string shared_;  // The shared words and a newline, or empty.
};

constexpr const char* kLanguages[kMaxLanguages] = {
    "Simplified Chinese", "English",  "Vietnamese", "Thai",   "Indonesian",
    "Malay",              "Japanese", "Korean",     "Filipino", "Traditional Chinese"};

// About 60 words, the same for every request and language.
constexpr const char* kTranslationInstruction =
    "You translate comments posted by viewers of a live video stream. Keep the meaning, the "
    "tone and any names exactly; keep emoji and numbers as they are; do not add explanations, "
    "quotes or notes; if a comment is already in the target language, repeat it unchanged; if "
    "it is unclear, translate it literally. Reply with the translation only, on one line. "
    "Target language: ";

class LiveCommentsWorkload final : public Workload {
 public:
  explicit LiveCommentsWorkload(WorkloadOptions o) : o_(std::move(o)) {}

  PlannedRequest Make(int64_t index) const override {
    const int64_t comment = index / o_.languages;
    const auto language = static_cast<size_t>(index % o_.languages);
    // Every language of one comment gets the same words.
    std::mt19937_64 rng = RngFor(o_.seed, comment);
    api::ChatCompletionRequest r;
    r.model = o_.model;
    r.messages.push_back({api::Role::kSystem, StrCat(kTranslationInstruction, kLanguages[language], "."), ""});
    r.messages.push_back({api::Role::kUser, RandomWords(rng, o_.prompt_words.Draw(rng)), ""});
    const auto tokens = static_cast<int32_t>(o_.output_tokens.Draw(rng));
    ForceStreamAndLength(r.options, tokens);
    return {"/v1/chat/completions", api::SerializeChatCompletionRequest(r), tokens};
  }
  int fan_out() const override { return o_.languages; }
  std::string name() const override { return "live-comments"; }

 private:
  WorkloadOptions o_;
};

class FileWorkload final : public Workload {
 public:
  struct Line {
    bool chat = false;
    api::CompletionRequest completion;
    api::ChatCompletionRequest chat_request;
    bool has_max_tokens = false;
  };

  FileWorkload(std::string path, std::vector<Line> lines, WorkloadOptions o)
      : path_(std::move(path)), lines_(std::move(lines)), o_(std::move(o)) {}

  PlannedRequest Make(int64_t index) const override {
    const Line& line = lines_[static_cast<size_t>(index) % lines_.size()];
    std::mt19937_64 rng = RngFor(o_.seed, index);
    const auto drawn = static_cast<int32_t>(o_.output_tokens.Draw(rng));
    if (line.chat) {
      api::ChatCompletionRequest r = line.chat_request;
      if (!o_.model.empty()) r.model = o_.model;
      const int32_t tokens = line.has_max_tokens ? *r.options.max_tokens : drawn;
      ForceStreamAndLength(r.options, tokens);
      return {"/v1/chat/completions", api::SerializeChatCompletionRequest(r), tokens};
    }
    api::CompletionRequest r = line.completion;
    if (!o_.model.empty()) r.model = o_.model;
    const int32_t tokens = line.has_max_tokens ? *r.options.max_tokens : drawn;
    ForceStreamAndLength(r.options, tokens);
    return {"/v1/completions", api::SerializeCompletionRequest(r), tokens};
  }
  std::string name() const override { return StrCat("file:", path_); }

 private:
  std::string path_;
  std::vector<Line> lines_;
  WorkloadOptions o_;
};

absl::StatusOr<std::unique_ptr<Workload>> LoadFile(const std::string& path,
                                                   const WorkloadOptions& o) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat(path, ": cannot open the workload file"));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size > kMaxWorkloadFileBytes) {
    return absl::InvalidArgumentError(
        StrCat(path, ": larger than ", kMaxWorkloadFileBytes >> 20, " MiB"));
  }
  in.seekg(0);
  std::vector<FileWorkload::Line> lines;
  std::string text;
  int64_t number = 0;
  api::ParseLimits limits;
  limits.max_n = 1;
  while (std::getline(in, text)) {
    ++number;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    if (static_cast<int64_t>(lines.size()) >= kMaxWorkloadLines) {
      return absl::InvalidArgumentError(StrCat(path, ": more than ", kMaxWorkloadLines, " requests"));
    }
    FileWorkload::Line line;
    // Told apart by their key; the request codec checks the rest.
    line.chat = text.find("\"messages\"") != std::string::npos;
    absl::Status status;
    if (line.chat) {
      auto r = api::ParseChatCompletionRequest(text, limits);
      status = r.status();
      if (r.ok()) line.chat_request = *std::move(r);
      line.has_max_tokens = r.ok() && line.chat_request.options.max_tokens.has_value();
    } else {
      auto r = api::ParseCompletionRequest(text, limits);
      status = r.status();
      if (r.ok() && r->prompts.size() != 1) {
        status = absl::InvalidArgumentError("prompt: give one prompt per line");
      }
      if (status.ok()) line.completion = *std::move(r);
      line.has_max_tokens = status.ok() && line.completion.options.max_tokens.has_value();
    }
    if (!status.ok()) {
      return absl::InvalidArgumentError(StrCat(path, ":", number, ": ", status.message()));
    }
    lines.push_back(std::move(line));
  }
  if (lines.empty()) {
    return absl::InvalidArgumentError(StrCat(path, ": no requests (one JSON object per line)"));
  }
  return std::make_unique<FileWorkload>(path, std::move(lines), o);
}

}  // namespace

absl::StatusOr<LengthSpec> LengthSpec::Parse(std::string_view text) {
  const size_t dash = text.find('-');
  if (dash == std::string_view::npos) {
    auto v = ParseCount(text);
    if (!v.ok()) return v.status();
    return LengthSpec{*v, *v};
  }
  auto lo = ParseCount(text.substr(0, dash));
  if (!lo.ok()) return lo.status();
  auto hi = ParseCount(text.substr(dash + 1));
  if (!hi.ok()) return hi.status();
  if (*lo > *hi) return absl::InvalidArgumentError(StrCat("'", text, "': the range is empty"));
  return LengthSpec{*lo, *hi};
}

int64_t LengthSpec::Draw(std::mt19937_64& rng) const {
  if (min == max) return min;
  return std::uniform_int_distribution<int64_t>(min, max)(rng);
}

std::string LengthSpec::ToString() const {
  return min == max ? StrCat(min) : StrCat(min, "-", max);
}

absl::StatusOr<std::unique_ptr<Workload>> MakeWorkload(std::string_view spec,
                                                       const WorkloadOptions& o) {
  if (o.output_tokens.min < 1 || o.output_tokens.max > kMaxLength ||
      o.output_tokens.min > o.output_tokens.max) {
    return absl::InvalidArgumentError("output tokens: invalid range");
  }
  if (o.shared_prefix_words < 0 || o.shared_prefix_words > kMaxSharedPrefixWords) {
    return absl::InvalidArgumentError(StrCat("shared prefix: must be 0..", kMaxSharedPrefixWords, " words"));
  }
  if (o.shared_prefix_words > 0 && spec != "synthetic") {
    return absl::InvalidArgumentError("shared prefix: only the synthetic workload has one");
  }
  if (spec == "synthetic") return std::make_unique<SyntheticWorkload>(o);
  if (spec == "live-comments") {
    if (o.languages < 1 || o.languages > kMaxLanguages) {
      return absl::InvalidArgumentError(StrCat("languages: must be in [1, ", kMaxLanguages, "]"));
    }
    return std::make_unique<LiveCommentsWorkload>(o);
  }
  if (spec.starts_with("file:") && spec.size() > 5) return LoadFile(std::string(spec.substr(5)), o);
  return absl::InvalidArgumentError(
      StrCat("unknown workload '", spec, "' (synthetic, file:PATH or live-comments)"));
}

}  // namespace swiftlet::loadgen
