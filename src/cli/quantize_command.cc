// swiftlet quantize IN OUT TYPE: converts a model's weights and reports the
// error each tensor picked up.
#include <cstdio>
#include <filesystem>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "cli/format.h"
#include "cli/progress.h"
#include "core/str_cat.h"
#include "core/parallel_for.h"
#include "gguf/gguf_file.h"
#include "model/quantize_model.h"

namespace swiftlet::cli {
namespace {

struct QuantizeOptions {
  std::string in_path;
  std::string out_path;
  std::string type;
  int threads = 0;  // 0: all cores.
};

void PrintStats(const TensorQuantStats& s) {
  std::printf("%-36s %-6s %-6s %12s %11.3e %10.3e\n", s.name.c_str(),
              std::string(NameOf(s.from)).c_str(), std::string(NameOf(s.to)).c_str(),
              HumanBytes(s.bytes_out).c_str(), s.rms_error(), s.relative_rms_error());
}


int RunQuantize(const QuantizeOptions& o) {
  auto target = ParseQuantTarget(o.type);
  if (!target.ok()) return ReportError(target.status());
  std::error_code ec;
  if (std::filesystem::equivalent(o.in_path, o.out_path, ec)) {
    return ReportError(o.out_path + ": output would overwrite the input");
  }
  auto in = GgufFile::Open(o.in_path);
  if (!in.ok()) return ReportError(in.status());

  ProgressLine line("quantize");
  auto progress = [&line](size_t done, size_t total, uint64_t bytes_done, uint64_t bytes_total) {
    // By bytes, which is where the time goes; tensors as the detail.
    line.Update(static_cast<int64_t>(bytes_done), static_cast<int64_t>(bytes_total),
                StrCat(done, "/", total, " tensors"));
  };
  const int threads = o.threads > 0 ? o.threads : DefaultThreads();
  auto report = QuantizeModel(**in, o.out_path, *target, threads, progress);
  line.Finish();
  if (!report.ok()) return ReportError(report.status());

  std::printf("%-36s %-6s %-6s %12s %11s %10s\n", "tensor", "from", "to", "bytes", "rms_error",
              "relative");
  for (const TensorQuantStats& s : report->tensors) PrintStats(s);
  std::printf("%-36s %-6s %-6s %12s %11.3e %10.3e\n", "total", "", "",
              HumanBytes(report->bytes_out).c_str(), report->total.rms_error(),
              report->total.relative_rms_error());
  std::printf("%s: %s -> %s (%s)\n", o.out_path.c_str(), HumanBytes(report->bytes_in).c_str(),
              HumanBytes(report->bytes_out).c_str(), std::string(target->name).c_str());
  return 0;
}

}  // namespace

Command AddQuantizeCommand(CLI::App& parent) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "quantize", "Convert a model's weights: TYPE is F16, Q8_0, Q4_0, Q4_K_M, Q5_K_M (or F32, BF16, Q5_0, Q4_K, Q5_K, Q6_K)");
  cmd->add_option("in", o->in_path, "Input GGUF")->required();
  cmd->add_option("out", o->out_path, "Output GGUF")->required();
  cmd->add_option("type", o->type, "Target type")->required();
  cmd->add_option("--threads", o->threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  return {cmd, [o] { return RunQuantize(*o); }};
}

}  // namespace swiftlet::cli
