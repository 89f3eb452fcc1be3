// swiftlet run: generates a continuation of one prompt on the command line.
// Only the continuation goes to stdout; timings go to stderr.
#include <chrono>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "core/thread_pool.h"
#include "core/str_cat.h"
#include "engine/sampling.h"
#include "model/model.h"
#include "model/model_runner.h"
#include "text/chat_template.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"

namespace swiftlet::cli {
namespace {

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
  std::string device = "cpu";
  std::string kv_type = "f16";
  int64_t context = 0;  // 0: the model's training context.
  bool chat = false;     // Wrap the prompt in the model's chat template.
  std::string chat_template;  // Template family overriding the file's.
};

constexpr int64_t kPrefillChunk = 512;

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}


int RunRun(const RunOptions& o) {
  auto kv_type = ParseKvType(o.kv_type);
  if (!kv_type.ok()) return ReportError(kv_type.status());
  SamplingParams sp;
  sp.temperature = static_cast<float>(o.temperature);
  sp.top_k = o.top_k;
  sp.top_p = static_cast<float>(o.top_p);
  sp.min_p = static_cast<float>(o.min_p);
  sp.repetition_penalty = static_cast<float>(o.repeat_penalty);
  sp.seed = o.seed;
  if (absl::Status s = ValidateSamplingParams(sp); !s.ok()) return ReportError(s);
  if (o.prompt.empty()) return ReportError("-p: the prompt is empty");

  auto model = LoadModel(o.model_path, DeviceFromFlag(o.device));
  if (!model.ok()) return ReportError(model.status());
  const ModelConfig& c = (*model)->config();
  auto tokenizer = Tokenizer::FromGguf((*model)->file());
  if (!tokenizer.ok()) return ReportError(tokenizer.status());

  std::vector<int32_t> tokens;
  if (o.chat) {
    // The prompt is one user turn; template text may hold control tokens,
    // the user's text never does. The template writes its own BOS.
    auto chat = ChatTemplate::FromGguf((*model)->file(), o.chat_template);
    if (!chat.ok()) return ReportError(chat.status());
    const ChatMessage turn{"user", o.prompt};
    auto pieces = chat->Render(std::span<const ChatMessage>(&turn, 1), /*add_generation_prompt=*/true);
    if (!pieces.ok()) return ReportError(pieces.status());
    std::vector<TextPiece> text;
    for (const ChatPiece& p : *pieces) text.push_back({p.text, !p.from_user});
    tokens = (*tokenizer)->EncodeMixed(text, /*add_bos=*/false);
  } else {
    tokens = (*tokenizer)->Encode(o.prompt, (*tokenizer)->add_bos_token());
  }
  const int64_t n_prompt = static_cast<int64_t>(tokens.size());
  const int64_t n_ctx = o.context > 0 ? std::min<int64_t>(o.context, c.n_ctx_train) : c.n_ctx_train;
  if (n_prompt + o.n_predict > n_ctx) {
    return ReportError(StrCat("the prompt (", n_prompt, " tokens) plus -n ", o.n_predict,
                              " exceeds the context of ", n_ctx, " tokens"));
  }
  ModelRunnerOptions ro;
  ro.positions = n_prompt + o.n_predict;
  ro.kv_type = *kv_type;
  ro.threads = o.threads > 0 ? o.threads : PhysicalCores();
  ro.max_kv_bytes = uint64_t{64} << 30;
  auto runner = ModelRunner::Create(**model, ro);
  if (!runner.ok()) return ReportError(runner.status());
  ForwardOutput out;
  Sampler sampler(sp);

  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t start = 0; start < n_prompt; start += kPrefillChunk) {
    Batch batch;
    const int64_t end = std::min(n_prompt, start + kPrefillChunk);
    for (int64_t t = start; t < end; ++t) batch.Add(tokens[t], static_cast<int32_t>(t), 0, t == n_prompt - 1);
    if (absl::Status s = (*runner)->Forward(batch, out); !s.ok()) {
      return ReportError(s);
    }
  }
  const auto t1 = std::chrono::steady_clock::now();

  // The continuation follows the prompt, so its leading space is kept.
  IncrementalDetokenizer detokenizer(**tokenizer, /*strip_leading_space=*/false);
  auto emit = [](const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };
  int64_t generated = 0;
  while (generated < o.n_predict) {
    std::span<float> logits(out.values.data(), static_cast<size_t>(out.row_size));
    const int32_t next = sampler.Sample(logits, tokens);
    if (next == Sampler::kNoToken) {
      return ReportError(absl::FailedPreconditionError(
          "no token can be drawn: every logit is masked or not finite (NaN or infinite logits come from a broken "
          "model)"));
    }
    if ((*tokenizer)->IsEog(next)) break;
    tokens.push_back(next);
    ++generated;
    emit(detokenizer.Push(next));
    if (generated == o.n_predict) break;
    Batch batch;
    batch.Add(next, static_cast<int32_t>(tokens.size() - 1), 0, true);
    if (absl::Status s = (*runner)->Forward(batch, out); !s.ok()) {
      return ReportError(s);
    }
  }
  emit(detokenizer.Flush() + "\n");
  const auto t2 = std::chrono::steady_clock::now();
  std::fprintf(stderr, "prompt: %lld tokens in %.3f s (%.1f tok/s)\n",
               static_cast<long long>(n_prompt), Seconds(t1 - t0), n_prompt / Seconds(t1 - t0));
  std::fprintf(stderr, "generation: %lld tokens in %.3f s (%.1f tok/s)\n",
               static_cast<long long>(generated), Seconds(t2 - t1),
               generated > 0 ? generated / Seconds(t2 - t1) : 0.0);
  return 0;
}

}  // namespace

Command AddRunCommand(CLI::App& parent) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = parent.add_subcommand("run", "Generate a continuation of a prompt");
  cmd->add_option("-m,--model", o->model_path, "GGUF model")->required();
  cmd->add_option("-p,--prompt", o->prompt, "Prompt text")->required();
  cmd->add_option("-n,--n-predict", o->n_predict, "Tokens to generate (default 128)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--temp", o->temperature, "Temperature, 0 for greedy (default 0.8)")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-k", o->top_k, "Top-k, 0 for off (default 40)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--top-p", o->top_p, "Top-p (default 0.95)")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--min-p", o->min_p, "Min-p (default 0.05)")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--repeat-penalty", o->repeat_penalty, "Repetition penalty (default 1)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--seed", o->seed, "Random seed (default 0)");
  cmd->add_option("--threads,-t", o->threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--kv-type", o->kv_type, "KV cache type: f16 (default), f32 or q8_0");
  AddDeviceOption(*cmd, o->device);
  cmd->add_flag("--chat", o->chat, "Send the prompt as a user turn of the model's chat template");
  cmd->add_option("--chat-template", o->chat_template,
                  "Template family when the model has none or an unrecognised one: chatml, "
                  "llama2, llama3, mistral-v1, mistral-v3, mistral-v7, gemma, phi3, deepseek");
  cmd->add_option("--ctx", o->context, "Context length (default: the model's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  return {cmd, [o] { return RunRun(*o); }};
}

}  // namespace swiftlet::cli
