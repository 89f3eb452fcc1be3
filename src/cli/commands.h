// The subcommands of `swiftlet`. main.cc parses flags into these option
// structs (only it sees CLI11); each Run* function does the work and returns
// the process exit code, printing errors as one line on stderr.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/tensor_type.h"

namespace swiftlet::cli {

struct InspectOptions {
  std::string model_path;  // Empty with `system`.
  bool json = false;
  bool system = false;     // Print this machine's CPU features and kernel choice.
};
int RunInspect(const InspectOptions& options);

struct QuantizeOptions {
  std::string in_path;
  std::string out_path;
  std::string type;
  int threads = 0;  // 0: all cores.
};
int RunQuantize(const QuantizeOptions& options);

struct MakeModelOptions {
  std::string out_path;
  std::string preset = "tiny";
  // Unset fields keep the preset's value.
  std::optional<std::string> arch;
  std::optional<int64_t> hidden, layers, heads, kv_heads, head_dim, ffn, context;
  std::optional<double> rope_base;
  bool tied = false;
  std::string type = "F32";
  std::string vocab_path;
  uint64_t seed = 1;
  int threads = 0;
};
int RunMakeModel(const MakeModelOptions& options);

struct LogitsOptions {
  std::string model_path;
  std::string tokens;  // Space-separated ids.
  std::string kv_type = "f32";
  int64_t chunk = 0;   // Prompt chunk size; 0: one batch.
  int threads = 0;
  std::string out_path;
};
int RunLogits(const LogitsOptions& options);

struct RunOptions {
  std::string model_path;
  std::string prompt;
  int64_t n_predict = 128;
  double temperature = 0.8;
  int32_t top_k = 40;
  double top_p = 0.95;
  double min_p = 0.05;
  double repeat_penalty = 1.0;
  uint64_t seed = 0;
  int threads = 0;
  std::string kv_type = "f16";
  int64_t context = 0;  // 0: the model's training context.
  bool chat = false;     // Wrap the prompt in the model's chat template.
  std::string chat_template;  // Template family overriding the file's.
};
int RunRun(const RunOptions& options);

struct TokenizeOptions {
  std::string model_path;
  std::string text;
  bool bos = false;
};
int RunTokenize(const TokenizeOptions& options);

// Shared flag parsers.
absl::StatusOr<TensorType> ParseKvType(const std::string& name);

// Prints "swiftlet: error: MESSAGE" on stderr; returns 1.
int ReportError(std::string_view message);
int ReportError(const absl::Status& status);

}  // namespace swiftlet::cli
