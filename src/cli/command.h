// The subcommands of `swiftlet`. Each command file registers its own
// subcommand and flags (CLI11, precompiled for this folder) under a parent
// app, and returns what runs it once the command line is parsed; main.cc
// only builds the tree and runs the one the user named.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/tensor_type.h"

namespace CLI {
class App;
}  // namespace CLI

namespace swiftlet {
class Model;                // model/model.h
struct ComputeDevice;   // model/forward_context.h (main.cc sees only cli/ and core/)
}  // namespace swiftlet

namespace swiftlet::cli {

struct Command {
  CLI::App* app = nullptr;    // Parsed into when the user named it.
  std::function<int()> run;   // The process exit code.
};

// Under the top-level app.
Command AddServeCommand(CLI::App& app);
Command AddRunCommand(CLI::App& app);
Command AddTokenizeCommand(CLI::App& app);
Command AddInspectCommand(CLI::App& app);
Command AddQuantizeCommand(CLI::App& app);
Command AddPlanCommand(CLI::App& app);
// `keys add`.
Command AddKeysCommand(CLI::App& app);
// `bench` (the HTTP load generator); `bench engine` under it.
Command AddBenchCommand(CLI::App& app);
Command AddBenchEngineCommand(CLI::App& bench);
Command AddGatewayCommand(CLI::App& app);
Command AddProbeCommand(CLI::App& app);
// Under `tools`.
Command AddMakeModelCommand(CLI::App& tools);
Command AddLogitsCommand(CLI::App& tools);
Command AddDriveCommand(CLI::App& tools);

// Prints "swiftlet: error: MESSAGE" on stderr; returns 1.
int ReportError(std::string_view message);
int ReportError(const absl::Status& status);

// Model::Load on `device`, with a progress line for the weights'
// preparation on a terminal (cli/progress.h) and nothing extra otherwise.
absl::StatusOr<std::unique_ptr<Model>> LoadModel(const std::string& path, ComputeDevice device);

// --device cpu|cuda on `cmd`, into `device` ("cpu" by default).
void AddDeviceOption(CLI::App& cmd, std::string& device);
// The parsed --device (AddDeviceOption checked the name).
ComputeDevice DeviceFromFlag(const std::string& device);

// --kv-type: f16, f32 or q8_0.
absl::StatusOr<TensorType> ParseKvType(const std::string& name);

}  // namespace swiftlet::cli
