#include "cli/hosted_model_loader.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "cli/command.h"
#include "core/str_cat.h"
#include "engine/pooling.h"
#include "model/model.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace swiftlet::cli {
namespace {

// The dashboard's model card: the config, and the weight type that holds
// the most bytes as "the" quantization (a Q4_K_M file is mostly Q4_K).
server::ModelCard CardOf(const Model& model) {
  const ModelConfig& c = model.config();
  server::ModelCard card;
  card.architecture = std::string(ArchitectureName(c.arch));
  card.context_train = c.n_ctx_train;
  card.layers = c.n_layer;
  card.embedding = c.n_embd;
  card.heads = c.n_head;
  card.kv_heads = c.n_head_kv;
  card.ffn = c.n_ff;
  card.vocab = c.n_vocab;
  std::map<std::string, uint64_t> bytes_by_type;
  for (const TensorInfo& t : model.Tensors()) {
    card.parameters += static_cast<int64_t>(t.n_elements);
    card.weight_bytes += t.n_bytes;
    bytes_by_type[std::string(NameOf(t.type))] += t.n_bytes;
  }
  uint64_t most = 0;
  for (const auto& [name, bytes] : bytes_by_type) {
    if (bytes > most) {
      most = bytes;
      card.quantization = name;
    }
  }
  return card;
}

void Say(const HostedModelOptions& o, const std::string& line) {
  if (!o.quiet) std::fprintf(stderr, "swiftlet: %s\n", line.c_str());
}

}  // namespace

absl::StatusOr<std::unique_ptr<server::HostedModel>> LoadHostedModel(const server::ModelSpec& spec,
                                                                     const HostedModelOptions& o) {
  Say(o, StrCat("loading ", spec.name, " (", spec.path, ")"));
  const auto t0 = std::chrono::steady_clock::now();
  SWIFTLET_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, o.quiet ? Model::Load(spec.path, nullptr, o.device)
                                                                           : LoadModel(spec.path, o.device));
  const auto t1 = std::chrono::steady_clock::now();
  auto hosted = std::make_unique<server::HostedModel>();
  SWIFTLET_ASSIGN_OR_RETURN(hosted->tokenizer, Tokenizer::FromGguf(model->file()));
  hosted->chat = ChatTemplate::FromGguf(model->file(), o.chat_template);
  if (!hosted->chat.ok() && !o.chat_template.empty()) {
    return absl::InvalidArgumentError(StrCat("--chat-template: ", hosted->chat.status().message()));
  }
  if (!hosted->chat.ok()) {
    Say(o, StrCat(spec.name, ": no chat template (", hosted->chat.status().message(),
                  "); /v1/chat/completions answers 400"));
  }
  // Embeddings run through the engine (their own class); a pooling type
  // this server does not compute turns them off with a 501.
  hosted->pooling = PoolingFor(model->config());
  if (!hosted->pooling.ok()) Say(o, StrCat(spec.name, ": embeddings off: ", hosted->pooling.status().message()));
  hosted->card = CardOf(*model);
  SWIFTLET_ASSIGN_OR_RETURN(hosted->engine, Engine::Create(*model, *hosted->tokenizer, o.engine));
  hosted->engine->Start();  // Calibrates: two forward passes.
  const auto t2 = std::chrono::steady_clock::now();
  hosted->memory_bytes = hosted->card.weight_bytes + model->PackedBytes() + hosted->engine->KvBytes();
  const EngineState state = hosted->engine->state();
  auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  Say(o, StrCat(spec.name, ": context ", hosted->engine->context(), " tokens, KV cache ", state.kv_blocks_total,
                " blocks of ", o.engine.kv_block_tokens, " tokens, ", hosted->memory_bytes >> 20, " MiB in all; loaded in ",
                ms(t2 - t0), " ms (map and repack ", ms(t1 - t0), " ms, engine and calibration ", ms(t2 - t1), " ms)"));
  hosted->weights = std::shared_ptr<const Model>(std::move(model));
  return hosted;
}

}  // namespace swiftlet::cli
