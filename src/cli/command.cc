#include "cli/command.h"

#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/progress.h"
#include "core/check.h"
#include "core/str_cat.h"
#include "model/model.h"

namespace swiftlet::cli {

int ReportError(std::string_view message) {
  std::fprintf(stderr, "swiftlet: error: %.*s\n", static_cast<int>(message.size()), message.data());
  return 1;
}

int ReportError(const absl::Status& status) {
  return ReportError(std::string_view(status.message().data(), status.message().size()));
}

absl::StatusOr<std::unique_ptr<Model>> LoadModel(const std::string& path, ComputeDevice device) {
  ProgressLine line(device.is_cuda() ? "swiftlet: uploading weights" : "swiftlet: repacking weights");
  auto model = Model::Load(
      path, [&line](int64_t done, int64_t total) { line.Update(done, total, StrCat(done, "/", total, " matrices")); },
      device);
  line.Finish();
  return model;
}

void AddDeviceOption(CLI::App& cmd, std::string& device) {
  cmd.add_option("--device", device,
                 "Where the model's weights live and its forwards run: cpu (default), cuda (the first GPU) or "
                 "cuda:N (GPU N; `swiftlet inspect --system` lists them)")
      ->check([](const std::string& value) {
        const absl::StatusOr<ComputeDevice> device = ParseComputeDevice(value);
        return device.ok() ? std::string() : std::string(device.status().message());
      });
}

ComputeDevice DeviceFromFlag(const std::string& device) {
  const absl::StatusOr<ComputeDevice> parsed = ParseComputeDevice(device);
  SWIFTLET_CHECK(parsed.ok());  // AddDeviceOption's check passed.
  return *parsed;
}

absl::StatusOr<TensorType> ParseKvType(const std::string& name) {
  if (name == "f16") return TensorType::kF16;
  if (name == "f32") return TensorType::kF32;
  if (name == "q8_0") return TensorType::kQ8_0;
  return absl::InvalidArgumentError(StrCat("--kv-type: '", name, "' is not f16, f32 or q8_0"));
}

}  // namespace swiftlet::cli
