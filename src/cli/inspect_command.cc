// swiftlet inspect: what a GGUF file holds, for people (a table) or tools
// (--json).
#include <cstdio>
#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "cli/format.h"
#include "core/str_cat.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "model/tensor_layout.h"
#include "perf/system_report.h"

namespace swiftlet::cli {
namespace {

struct InspectOptions {
  std::string model_path;  // Empty with `system`.
  bool json = false;
  bool system = false;     // Print this machine's CPU features and kernel choice.
};

nlohmann::json ValueToJson(const GgufValue& v) {
  if (v.is_integer()) {
    if (v.type() == GgufType::kUint64) return v.AsUint64();
    return v.AsInt64();
  }
  if (v.is_float()) return v.AsDouble();
  if (v.type() == GgufType::kBool) return v.AsBool();
  if (v.type() == GgufType::kString) return v.AsString();
  // Arrays are summarised: a tokenizer holds hundreds of thousands of items.
  return nlohmann::json{{"type", GgufTypeName(v.array_type())}, {"count", v.array_size()}};
}

std::string TensorShape(const GgufTensor& t) {
  return ShapeString(std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims));
}

std::string KindOfTokenizer(std::string_view model) {
  if (model == "llama") return "SentencePiece BPE";
  if (model == "gpt2") return "byte-level BPE";
  if (model == "bert") return "WordPiece";
  return "unknown";
}

struct Summary {
  std::string architecture;
  std::string model_name;
  std::string tokenizer_model;
  std::string tokenizer_pre;
  uint64_t vocab_size = 0;
  uint64_t parameters = 0;
  uint64_t tensor_bytes = 0;
  std::vector<const GgufKv*> hyperparameters;  // Scalar "<arch>.*" keys.
};

Summary Summarise(const GgufFile& f) {
  Summary s;
  if (auto a = f.GetString("general.architecture"); a.ok()) s.architecture = *a;
  if (auto n = f.GetString("general.name"); n.ok()) s.model_name = *n;
  if (auto m = f.GetString("tokenizer.ggml.model"); m.ok()) s.tokenizer_model = *m;
  if (auto p = f.GetString("tokenizer.ggml.pre"); p.ok()) s.tokenizer_pre = *p;
  if (const GgufValue* tokens = f.Find("tokenizer.ggml.tokens"); tokens && tokens->is_array()) {
    s.vocab_size = tokens->array_size();
  }
  for (const GgufTensor& t : f.tensors()) {
    s.parameters += t.n_elements;
    s.tensor_bytes += t.n_bytes;
  }
  const std::string prefix = s.architecture + ".";
  for (const GgufKv& kv : f.metadata()) {
    if (!s.architecture.empty() && kv.key.rfind(prefix, 0) == 0 && !kv.value.is_array()) {
      s.hyperparameters.push_back(&kv);
    }
  }
  return s;
}

void PrintJson(const GgufFile& f, const Summary& s) {
  nlohmann::json j;
  j["file"] = f.name();
  j["gguf_version"] = f.version();
  j["file_bytes"] = f.file_size();
  j["alignment"] = f.alignment();
  j["architecture"] = s.architecture;
  j["name"] = s.model_name;
  nlohmann::json hp = nlohmann::json::object();
  for (const GgufKv* kv : s.hyperparameters) {
    hp[kv->key.substr(s.architecture.size() + 1)] = ValueToJson(kv->value);
  }
  j["hyperparameters"] = hp;
  j["tokenizer"] = {{"model", s.tokenizer_model},
                    {"kind", KindOfTokenizer(s.tokenizer_model)},
                    {"pre", s.tokenizer_pre},
                    {"tokens", s.vocab_size}};
  nlohmann::json meta = nlohmann::json::object();
  for (const GgufKv& kv : f.metadata()) meta[kv.key] = ValueToJson(kv.value);
  j["metadata"] = meta;
  nlohmann::json tensors = nlohmann::json::array();
  for (const GgufTensor& t : f.tensors()) {
    tensors.push_back({{"name", t.name},
                       {"type", NameOf(t.type)},
                       {"shape", std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims)},
                       {"elements", t.n_elements},
                       {"bytes", t.n_bytes},
                       {"offset", t.offset}});
  }
  j["tensors"] = tensors;
  j["totals"] = {{"tensors", f.tensors().size()},
                 {"parameters", s.parameters},
                 {"bytes", s.tensor_bytes}};
  std::printf("%s\n", j.dump(2).c_str());
}

void PrintText(const GgufFile& f, const Summary& s) {
  std::printf("file          %s (GGUF v%u, %s, alignment %llu)\n", f.name().c_str(), f.version(),
              HumanBytes(f.file_size()).c_str(), static_cast<unsigned long long>(f.alignment()));
  if (!s.model_name.empty()) std::printf("name          %s\n", s.model_name.c_str());
  std::printf("architecture  %s\n", s.architecture.empty() ? "(none)" : s.architecture.c_str());
  if (!s.hyperparameters.empty()) {
    std::printf("hyperparameters\n");
    for (const GgufKv* kv : s.hyperparameters) {
      std::printf("  %-40s %s\n", kv->key.substr(s.architecture.size() + 1).c_str(),
                  kv->value.Summary().c_str());
    }
  }
  if (!s.tokenizer_model.empty()) {
    std::printf("tokenizer     %s (%s%s%s), %llu tokens\n", s.tokenizer_model.c_str(),
                KindOfTokenizer(s.tokenizer_model).c_str(), s.tokenizer_pre.empty() ? "" : ", pre ",
                s.tokenizer_pre.c_str(), static_cast<unsigned long long>(s.vocab_size));
  }
  std::printf("tensors       %zu, %s parameters, %s\n", f.tensors().size(),
              HumanCount(s.parameters).c_str(), HumanBytes(s.tensor_bytes).c_str());
  if (f.tensors().empty()) return;
  std::printf("  %-36s %-6s %-20s %12s\n", "name", "type", "shape", "bytes");
  for (const GgufTensor& t : f.tensors()) {
    std::printf("  %-36s %-6s %-20s %12s\n", t.name.c_str(), std::string(NameOf(t.type)).c_str(),
                TensorShape(t).c_str(), HumanBytes(t.n_bytes).c_str());
  }
}


void PrintSystem() {
  const std::string report = SystemReport();
  std::fwrite(report.data(), 1, report.size(), stdout);
}


int RunInspect(const InspectOptions& options) {
  if (options.system) {
    PrintSystem();
    if (options.model_path.empty()) return 0;
  }
  if (options.model_path.empty()) return ReportError("inspect: give a model file (or --system)");
  auto file = GgufFile::Open(options.model_path);
  if (!file.ok()) return ReportError(file.status());
  const GgufFile& f = **file;
  // A model's tensors must agree with its hyperparameters; a vocabulary-only
  // file (no tensors) and architectures swiftlet cannot run are shown as is.
  const GgufValue* arch = f.Find("general.architecture");
  if (!f.tensors().empty() && arch != nullptr && arch->type() == GgufType::kString &&
      ArchitectureFromName(arch->AsString()).ok()) {
    auto config = ReadModelConfig(f);
    if (!config.ok()) return ReportError(config.status());
    if (absl::Status s = ValidateTensors(*config, f); !s.ok()) return ReportError(s);
  }
  const Summary summary = Summarise(f);
  if (options.json) {
    PrintJson(f, summary);
  } else {
    PrintText(f, summary);
  }
  return 0;
}

}  // namespace

Command AddInspectCommand(CLI::App& parent) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* cmd = parent.add_subcommand("inspect", "Show what a GGUF file holds");
  cmd->add_option("model", o->model_path, "GGUF file");
  cmd->add_flag("--json", o->json, "Print JSON instead of a table");
  cmd->add_flag("--system", o->system,
                "Print the CPU features found and the kernels chosen");
  return {cmd, [o] { return RunInspect(*o); }};
}

}  // namespace swiftlet::cli
