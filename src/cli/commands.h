// The subcommands of `swiftlet`. main.cc parses flags into these option
// structs (only it sees CLI11); each Run* function does the work and returns
// the process exit code, printing errors as one line on stderr.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// Flag ranges of `bench engine` (bench_engine_command.cc asserts they match
// the engine's).
inline constexpr int64_t kBenchMaxGenTokens = 4096;
inline constexpr int64_t kBenchMaxBatch = 256;
inline constexpr int kBenchMaxRepeat = 100;

struct BenchEngineOptions {
  std::string model_path;
  int64_t prompt_tokens = 128;
  int64_t gen_tokens = 64;
  std::vector<int64_t> batch_sizes = {1, 4, 16};
  int threads = 0;  // 0: all physical cores.
  int repeat = 3;
  bool json = false;
  bool quick_limits = false;  // Millisecond machine-limit runs, for tests.
};
// swiftlet bench engine: machine limits, then pp/tg/batched tg of a model.
int RunBenchEngine(const BenchEngineOptions& options);

// swiftlet bench (the load generator): drives an OpenAI-compatible server
// over HTTP and reports latency percentiles and goodput per load point.
struct BenchLoadOptions {
  std::string url;
  std::string model;                  // Empty: the server's first /v1/models entry.
  std::vector<double> rates;          // Open loop, a sweep when several.
  std::vector<int64_t> concurrencies; // Closed loop, a sweep when several.
  int64_t requests = 0;               // Per point.
  std::string duration;               // Per point, "30s".
  int64_t warmup = -1;                // Requests; -1: 10% of the point, at most 20.
  double burstiness = 1;
  std::string prompt_tokens = "40";   // Words: "40" or "20-60".
  std::string output_tokens = "32";
  std::string workload = "synthetic";
  int64_t streams = 1;
  int languages = 3;
  std::string slo = "ttft=500ms,tpot=100ms";
  std::string timeout = "120s";       // Per request, and the drain wait of a point.
  uint64_t seed = 1;
  std::string json_path;
  std::string html_path;
};
int RunBenchLoad(const BenchLoadOptions& options);

// Shared flag parsers.
absl::StatusOr<TensorType> ParseKvType(const std::string& name);

// Prints "swiftlet: error: MESSAGE" on stderr; returns 1.
int ReportError(std::string_view message);
int ReportError(const absl::Status& status);

struct DriveOptions {
  std::string model_path;
  std::vector<double> rates;         // requests/s, a sweep
  int64_t requests = 0;              // per rate; 0: max(40, 15 s of arrivals)
  int64_t prompt_words = 40;
  int64_t shared_prefix_words = 0;   // an instruction shared by every request
  int64_t output_tokens = 32;
  std::string slo = "ttft=500ms,tpot=100ms";
  double burstiness = 1;
  int threads = 0;
  uint64_t kv_memory_bytes = 0;      // 0: the engine's default
  int64_t step_tokens = 0;           // 0: the engine's default
  int64_t chunk_tokens = 0;
  uint64_t seed = 1;
  std::string json_path;
};
int RunDrive(const DriveOptions& options);

// swiftlet serve. Sizes and durations are strings parsed by the command
// (core/byte_size.h, core/duration.h), so errors name the flag.
struct ServeOptions {
  std::string model_path;
  std::string host = "127.0.0.1";
  int port = 8080;                     // 0: an ephemeral port (printed)
  int threads = 0;                     // Engine threads; 0: physical cores
  std::string kv_memory;               // Empty: a share of free RAM
  std::string kv_type = "f16";
  int64_t context = 0;                 // Per sequence; 0: the model's (capped)
  int64_t max_queue = 1024;
  int64_t max_queued_tokens = 1 << 18;
  int32_t max_running = 64;
  int32_t max_tokens = 0;              // Cap on max_tokens; 0: the context
  int64_t step_tokens = 0;             // 0: the engine's default
  int64_t chunk_tokens = 0;
  std::string slo_interactive = "ttft=500ms,tpot=100ms";
  std::string slo_batch = "ttft=30s";
  std::string chat_template;
  std::string model_name;              // Empty: the file name without .gguf
  int io_threads = 2;
  int64_t max_connections = 10000;
  std::string max_body = "8MiB";
  std::string grace = "10s";
  std::string header_timeout = "10s";  // Slow-loris bounds (HttpServerOptions).
  std::string body_timeout = "30s";
  std::string idle_timeout = "60s";
  int embedding_threads = 1;
  bool log_content = false;
  bool no_prefix_cache = false;
};
int RunServe(const ServeOptions& options);

}  // namespace swiftlet::cli
