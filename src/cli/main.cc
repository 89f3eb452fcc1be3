// swiftlet: one binary, one subcommand per job. This file only parses flags
// (CLI11 stays out of every other translation unit) and dispatches.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"

namespace swiftlet::cli {

int ReportError(std::string_view message) {
  std::fprintf(stderr, "swiftlet: error: %.*s\n", static_cast<int>(message.size()), message.data());
  return 1;
}

int ReportError(const absl::Status& status) {
  return ReportError(std::string_view(status.message().data(), status.message().size()));
}

namespace {

constexpr int64_t kMaxDim = int64_t{1} << 20;

template <typename T>
void AddOptional(CLI::App* app, const std::string& flag, std::optional<T>& target,
                 const std::string& help, int64_t max) {
  app->add_option_function<int64_t>(flag, [&target](int64_t v) { target = static_cast<T>(v); }, help)
      ->check(CLI::Range(int64_t{1}, max));
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"swiftlet: real-time inference server for Transformer language models"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");

  InspectOptions inspect;
  CLI::App* inspect_cmd = app.add_subcommand("inspect", "Show what a GGUF file holds");
  inspect_cmd->add_option("model", inspect.model_path, "GGUF file");
  inspect_cmd->add_flag("--json", inspect.json, "Print JSON instead of a table");
  inspect_cmd->add_flag("--system", inspect.system,
                        "Print the CPU features found and the kernels chosen");

  QuantizeOptions quantize;
  CLI::App* quantize_cmd = app.add_subcommand(
      "quantize", "Convert a model's weights: TYPE is F16, Q8_0, Q4_0, Q4_K_M (or F32, BF16, Q5_0, Q4_K, Q5_K, Q6_K)");
  quantize_cmd->add_option("in", quantize.in_path, "Input GGUF")->required();
  quantize_cmd->add_option("out", quantize.out_path, "Output GGUF")->required();
  quantize_cmd->add_option("type", quantize.type, "Target type")->required();
  quantize_cmd->add_option("--threads", quantize.threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));

  RunOptions run;
  CLI::App* run_cmd = app.add_subcommand("run", "Generate a continuation of a prompt");
  run_cmd->add_option("-m,--model", run.model_path, "GGUF model")->required();
  run_cmd->add_option("-p,--prompt", run.prompt, "Prompt text")->required();
  run_cmd->add_option("-n,--n-predict", run.n_predict, "Tokens to generate (default 128)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  run_cmd->add_option("--temp", run.temperature, "Temperature, 0 for greedy (default 0.8)")
      ->check(CLI::Range(0.0, 100.0));
  run_cmd->add_option("--top-k", run.top_k, "Top-k, 0 for off (default 40)")
      ->check(CLI::Range(0, 1 << 24));
  run_cmd->add_option("--top-p", run.top_p, "Top-p (default 0.95)")->check(CLI::Range(0.0, 1.0));
  run_cmd->add_option("--min-p", run.min_p, "Min-p (default 0.05)")->check(CLI::Range(0.0, 1.0));
  run_cmd->add_option("--repeat-penalty", run.repeat_penalty, "Repetition penalty (default 1)")
      ->check(CLI::Range(0.0, 10.0));
  run_cmd->add_option("--seed", run.seed, "Random seed (default 0)");
  run_cmd->add_option("--threads,-t", run.threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  run_cmd->add_option("--kv-type", run.kv_type, "KV cache type: f16 (default) or f32");
  run_cmd->add_flag("--chat", run.chat, "Send the prompt as a user turn of the model's chat template");
  run_cmd->add_option("--chat-template", run.chat_template,
                      "Template family when the model has none or an unrecognised one: chatml, "
                      "llama2, llama3, mistral-v1, mistral-v3, mistral-v7, gemma, phi3, deepseek");
  run_cmd->add_option("--ctx", run.context, "Context length (default: the model's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));

  TokenizeOptions tokenize;
  CLI::App* tokenize_cmd = app.add_subcommand("tokenize", "Print the token ids of a text");
  tokenize_cmd->add_option("-m,--model", tokenize.model_path, "GGUF model or vocabulary")->required();
  tokenize_cmd->add_option("--text", tokenize.text, "Text to tokenize")->required();
  tokenize_cmd->add_flag("--bos", tokenize.bos, "Prepend the BOS token");

  CLI::App* tools_cmd = app.add_subcommand("tools", "Developer tools");
  tools_cmd->require_subcommand(1);
  MakeModelOptions make;
  CLI::App* make_cmd = tools_cmd->add_subcommand(
      "make-model", "Write a Llama-family GGUF with seeded random weights");
  make_cmd->add_option("--out,-o", make.out_path, "Output GGUF")->required();
  make_cmd->add_option("--preset", make.preset,
                       "Shape: tiny, tinyllama-1.1b, smollm2-135m, qwen2.5-0.5b, qwen3-0.6b");
  make_cmd->add_option_function<std::string>(
      "--arch", [&make](const std::string& v) { make.arch = v; }, "llama, qwen2 or qwen3");
  AddOptional(make_cmd, "--hidden", make.hidden, "Embedding width", kMaxDim);
  AddOptional(make_cmd, "--layers", make.layers, "Transformer blocks", 1024);
  AddOptional(make_cmd, "--heads", make.heads, "Attention heads", kMaxDim);
  AddOptional(make_cmd, "--kv-heads", make.kv_heads, "Key/value heads", kMaxDim);
  AddOptional(make_cmd, "--head-dim", make.head_dim, "Head dimension (default hidden/heads)", 1024);
  AddOptional(make_cmd, "--ffn", make.ffn, "Feed-forward width", kMaxDim);
  AddOptional(make_cmd, "--context", make.context, "Training context length", int64_t{1} << 24);
  make_cmd->add_option_function<double>(
      "--rope-base", [&make](double v) { make.rope_base = v; }, "RoPE frequency base")
      ->check(CLI::Range(1.0, 1e12));
  make_cmd->add_flag("--tied", make.tied, "No output.weight: the head reuses token_embd");
  make_cmd->add_option("--type", make.type, "Weight format, as for quantize (default F32)");
  make_cmd->add_option("--vocab", make.vocab_path,
                       "GGUF whose tokenizer to copy (default: a small synthetic one)");
  make_cmd->add_option("--seed", make.seed, "Random seed");
  make_cmd->add_option("--threads", make.threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));

  // CLI11 would only say "a subcommand is required"; name the mistake.
  const std::string first = argc > 1 ? argv[1] : "";
  if (!first.empty() && first[0] != '-' && first != "inspect" && first != "quantize" &&
      first != "run" && first != "tokenize" && first != "tools") {
    ReportError("unknown command '" + first + "' (commands: run, tokenize, inspect, quantize, tools)");
    return 2;
  }
  LogitsOptions logits;
  CLI::App* logits_cmd = tools_cmd->add_subcommand(
      "logits", "Write the logits at every position of a token sequence (float32)");
  logits_cmd->add_option("-m,--model", logits.model_path, "GGUF model")->required();
  logits_cmd->add_option("--tokens", logits.tokens, "Token ids, space-separated")->required();
  logits_cmd->add_option("--kv-type", logits.kv_type, "KV cache type: f16 or f32 (default f32)");
  logits_cmd->add_option("--chunk", logits.chunk, "Prompt chunk size (default: all at once)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  logits_cmd->add_option("--threads", logits.threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  logits_cmd->add_option("--out,-o", logits.out_path, "Output file")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    ReportError(e.what());
    return 2;
  }

  if (*run_cmd) return RunRun(run);
  if (*tokenize_cmd) return RunTokenize(tokenize);
  if (*inspect_cmd) return RunInspect(inspect);
  if (*quantize_cmd) return RunQuantize(quantize);
  if (*make_cmd) return RunMakeModel(make);
  if (*logits_cmd) return RunLogits(logits);
  return ReportError("no subcommand");
}

}  // namespace swiftlet::cli

int main(int argc, char** argv) { return swiftlet::cli::Main(argc, argv); }
