// What `swiftlet serve` does to make a model hot: map and repack the GGUF
// file, read its tokenizer, chat template and pooling, create and start
// its engine (calibration included). The server's model registry calls it
// on its own thread for each load.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "engine/engine.h"
#include "model/forward_context.h"
#include "server/model_registry.h"

namespace swiftlet::cli {

struct HostedModelOptions {
  EngineConfig engine;        // step_gate set when several models share the cores.
  std::string chat_template;  // --chat-template: the family when a file has none.
  bool quiet = false;         // No progress lines on stderr.
  ComputeDevice device = ComputeDevice::Cpu();  // --device
};

absl::StatusOr<std::unique_ptr<server::HostedModel>> LoadHostedModel(const server::ModelSpec& spec,
                                                                     const HostedModelOptions& options);

}  // namespace swiftlet::cli
