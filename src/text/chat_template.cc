// Template names, family detection and construction. Rendering lives in
// chat_template_render.cc.
#include "text/chat_template.h"

#include <array>
#include <ctime>
#include <utility>

#include "core/str_cat.h"
#include "gguf/gguf_file.h"

namespace swiftlet {
namespace {

struct KindName {
  std::string_view name;
  ChatTemplateKind kind;
};

// Canonical names first; ChatTemplateNameList() lists only those.
constexpr std::array<KindName, 9> kKindNames = {{
    {"chatml", ChatTemplateKind::kChatML},
    {"llama2", ChatTemplateKind::kLlama2},
    {"llama3", ChatTemplateKind::kLlama3},
    {"mistral-v1", ChatTemplateKind::kMistralV1},
    {"mistral-v3", ChatTemplateKind::kMistralV3},
    {"mistral-v7", ChatTemplateKind::kMistralV7},
    {"gemma", ChatTemplateKind::kGemma},
    {"phi3", ChatTemplateKind::kPhi3},
    {"deepseek", ChatTemplateKind::kDeepSeek},
}};

constexpr std::string_view kTekkenV3 = "mistral-v3-tekken";
constexpr std::string_view kTekkenV7 = "mistral-v7-tekken";

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// The text between `prefix` and the next `end` in `source`, for the first
// occurrence whose text is a plain literal (no quotes, escapes or Jinja).
std::string LiteralAfter(std::string_view source, std::string_view prefix,
                         std::string_view end) {
  size_t pos = 0;
  while ((pos = source.find(prefix, pos)) != std::string_view::npos) {
    pos += prefix.size();
    const size_t stop = source.find(end, pos);
    if (stop == std::string_view::npos) break;
    const std::string_view text = source.substr(pos, stop - pos);
    if (!text.empty() &&
        text.find_first_of("'\"\\{}+\n") == std::string_view::npos) {
      return std::string(text);
    }
  }
  return "";
}

// The token text for the id stored under `id_key`; empty when absent.
absl::StatusOr<std::string> SpecialToken(const GgufFile& file,
                                         std::string_view id_key) {
  const GgufValue* id_value = file.Find(id_key);
  if (id_value == nullptr) return std::string();
  SWIFTLET_ASSIGN_OR_RETURN(const int64_t id, file.GetInt(id_key));
  SWIFTLET_ASSIGN_OR_RETURN(const GgufValue* tokens,
                            file.GetArray("tokenizer.ggml.tokens"));
  if (tokens->array_type() != GgufType::kString) {
    return absl::InvalidArgumentError(
        StrCat(file.name(), ": tokenizer.ggml.tokens is not a string array"));
  }
  if (id < 0 || static_cast<uint64_t>(id) >= tokens->strings().size()) {
    return absl::InvalidArgumentError(
        StrCat(file.name(), ": ", id_key, " ", id, " is outside the ",
               tokens->strings().size(), "-token vocabulary"));
  }
  return tokens->strings()[static_cast<size_t>(id)];
}

}  // namespace

std::optional<ChatTemplateKind> ChatTemplateKindFromName(std::string_view name) {
  for (const KindName& k : kKindNames) {
    if (k.name == name) return k.kind;
  }
  if (name == kTekkenV3) return ChatTemplateKind::kMistralV3;
  if (name == kTekkenV7) return ChatTemplateKind::kMistralV7;
  return std::nullopt;
}

std::string_view ChatTemplateKindName(ChatTemplateKind kind) {
  for (const KindName& k : kKindNames) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

std::string ChatTemplateNameList() {
  std::string out;
  for (const KindName& k : kKindNames) {
    if (!out.empty()) out += ", ";
    out += k.name;
  }
  return StrCat(out, ", ", kTekkenV3, ", ", kTekkenV7);
}

std::optional<ChatTemplateKind> DetectChatTemplate(std::string_view source) {
  // Most distinctive markers first: some templates mention others' tokens.
  if (Contains(source, "<｜User｜>")) return ChatTemplateKind::kDeepSeek;
  if (Contains(source, "<|start_header_id|>")) return ChatTemplateKind::kLlama3;
  if (Contains(source, "<start_of_turn>")) return ChatTemplateKind::kGemma;
  if (Contains(source, "<|im_start|>")) return ChatTemplateKind::kChatML;
  if (Contains(source, "<|user|>") && Contains(source, "<|end|>")) {
    return ChatTemplateKind::kPhi3;
  }
  if (Contains(source, "[INST]")) {
    if (Contains(source, "[SYSTEM_PROMPT]")) return ChatTemplateKind::kMistralV7;
    if (Contains(source, "<<SYS>>")) return ChatTemplateKind::kLlama2;
    // v1 puts a space before [INST] and [/INST]; v3 and v3-tekken do not.
    if (Contains(source, " [/INST]")) return ChatTemplateKind::kMistralV1;
    return ChatTemplateKind::kMistralV3;
  }
  return std::nullopt;
}

ChatTemplate ChatTemplate::Of(ChatTemplateKind kind, std::string bos_token,
                              std::string eos_token) {
  ChatTemplate t;
  t.kind_ = kind;
  t.bos_token_ = std::move(bos_token);
  t.eos_token_ = std::move(eos_token);
  t.llama3_knowledge_date_ = "December 2023";
  t.llama3_default_date_ = "26 Jul 2024";
  return t;
}

absl::StatusOr<ChatTemplate> ChatTemplate::FromSource(
    std::string_view source, std::string bos_token, std::string eos_token) {
  const std::optional<ChatTemplateKind> kind = DetectChatTemplate(source);
  if (!kind.has_value()) {
    return absl::InvalidArgumentError(StrCat(
        "chat template is not recognised (one of ", ChatTemplateNameList(),
        " expected)"));
  }
  ChatTemplate t = Of(*kind, std::move(bos_token), std::move(eos_token));
  switch (*kind) {
    case ChatTemplateKind::kChatML:
      // Qwen 2.5: "{{- '<|im_start|>system\nYou are Qwen, ...<|im_end|>\n' }}".
      t.default_system_ = LiteralAfter(source, "<|im_start|>system\\n", "<|im_end|>");
      break;
    case ChatTemplateKind::kLlama3:
      t.llama3_date_header_ = Contains(source, "Cutting Knowledge Date: ");
      if (t.llama3_date_header_) {
        t.llama3_knowledge_date_ =
            LiteralAfter(source, "Cutting Knowledge Date: ", "\\n");
        const std::string fallback =
            LiteralAfter(source, "date_string = \"", "\"");
        if (!fallback.empty()) t.llama3_default_date_ = fallback;
        t.llama3_current_date_ = Contains(source, "strftime_now");
      }
      break;
    case ChatTemplateKind::kMistralV3:
    case ChatTemplateKind::kMistralV7:
      t.mistral_spaces_ = Contains(source, "[INST] ");
      break;
    case ChatTemplateKind::kPhi3:
      t.phi3_bos_ = Contains(source, "bos_token");
      t.phi3_eos_ = Contains(source, "eos_token");
      t.phi3_skip_empty_system_ =
          Contains(source, "'system' and message['content']");
      break;
    default:
      break;
  }
  return t;
}

absl::StatusOr<ChatTemplate> ChatTemplate::FromGguf(
    const GgufFile& file, std::string_view override_name) {
  SWIFTLET_ASSIGN_OR_RETURN(std::string bos,
                            SpecialToken(file, "tokenizer.ggml.bos_token_id"));
  SWIFTLET_ASSIGN_OR_RETURN(std::string eos,
                            SpecialToken(file, "tokenizer.ggml.eos_token_id"));
  std::string source;
  if (file.Find("tokenizer.chat_template") != nullptr) {
    SWIFTLET_ASSIGN_OR_RETURN(source, file.GetString("tokenizer.chat_template"));
  }

  if (!override_name.empty()) {
    const std::optional<ChatTemplateKind> kind =
        ChatTemplateKindFromName(override_name);
    if (!kind.has_value()) {
      return absl::InvalidArgumentError(
          StrCat("unknown --chat-template '", override_name, "' (one of ",
                 ChatTemplateNameList(), ")"));
    }
    ChatTemplate t = Of(*kind, bos, eos);
    if (DetectChatTemplate(source) == kind) {
      SWIFTLET_ASSIGN_OR_RETURN(t, FromSource(source, bos, eos));
    }
    if (override_name == kTekkenV3 || override_name == kTekkenV7) {
      t.mistral_spaces_ = false;
    }
    return t;
  }

  if (source.empty()) {
    return absl::InvalidArgumentError(
        StrCat(file.name(), " has no chat template; pass --chat-template NAME (one of ",
               ChatTemplateNameList(), ")"));
  }
  if (!DetectChatTemplate(source).has_value()) {
    return absl::InvalidArgumentError(
        StrCat(file.name(), ": chat template is not recognised; pass --chat-template NAME (one of ",
               ChatTemplateNameList(), ")"));
  }
  return FromSource(source, std::move(bos), std::move(eos));
}

std::string ChatTemplate::TodayDate() const {
  if (date_string_.has_value()) return *date_string_;
  if (!llama3_current_date_) return llama3_default_date_;
  // As the template's strftime_now("%d %b %Y") in Python: local time, C locale.
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), "%d %b %Y", &local);
  return std::string(buf, n);
}

}  // namespace swiftlet
