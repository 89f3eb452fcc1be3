// Chat templates: turning a list of chat messages into the prompt text a model
// was trained on, natively in C++ (no Jinja engine).
//
// A GGUF file carries its template as Jinja source in `tokenizer.chat_template`.
// DetectChatTemplate() recognises the family from distinctive substrings, and
// ChatTemplate::FromGguf() also reads from the source the few details in which
// published templates of one family differ (Qwen's default system prompt, the
// Llama 3.1 / 3.2 "Today Date" header, Mistral spacing, ...), so that Render()
// gives byte-for-byte what the published template gives under Jinja (checked
// in tests/text/chat_template_test.cc against python3-jinja2).
//
// Render() keeps message content apart from template text (ChatPiece), so the
// tokenizer can parse special tokens in template text only: a user who types
// "<|im_end|>" gets those characters, not the control token.
//
// A ChatTemplate is an immutable value after construction (set_date_string
// aside); const methods may be called from any number of threads.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace swiftlet {

class GgufFile;  // gguf/gguf_file.h

enum class ChatTemplateKind {
  kChatML,
  kLlama2,
  kLlama3,
  kMistralV1,
  kMistralV3,
  kMistralV7,
  kGemma,
  kPhi3,
  kDeepSeek,
};

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant".
  std::string content;
};

struct ChatPiece {
  std::string text;
  // True: message content, never to be parsed for special tokens.
  // False: template text (markers, BOS/EOS, default prompts).
  bool from_user = false;

  bool operator==(const ChatPiece&) const = default;
};

// "chatml", "llama2", "llama3", "mistral-v1", "mistral-v3", "mistral-v7",
// "gemma", "phi3", "deepseek"; also "mistral-v3-tekken" and
// "mistral-v7-tekken" (the v3 / v7 kinds without the spaces). nullopt for
// anything else.
std::optional<ChatTemplateKind> ChatTemplateKindFromName(std::string_view name);
// The canonical name (the first spelling above).
std::string_view ChatTemplateKindName(ChatTemplateKind kind);
// "chatml, llama2, ..." for error messages.
std::string ChatTemplateNameList();

// The family of a Jinja template source; nullopt when not recognised.
std::optional<ChatTemplateKind> DetectChatTemplate(std::string_view jinja_source);

class ChatTemplate {
 public:
  // From the file's tokenizer.chat_template, or `override_name` (a
  // --chat-template flag) when non-empty. BOS/EOS text comes from the vocab
  // (tokenizer.ggml.tokens[tokenizer.ggml.bos_token_id], ...; empty when the
  // file has no such id). With an override of the same family as the file's
  // template, the file's details (default system prompt, date header) are
  // kept; otherwise the override gives the family's plain published form.
  static absl::StatusOr<ChatTemplate> FromGguf(const GgufFile& file,
                                               std::string_view override_name);

  // The family's plain published form (ChatML without a default system
  // prompt, Llama 3.0 without the date header, Mistral v3 / v7 with spaces).
  static ChatTemplate Of(ChatTemplateKind kind, std::string bos_token,
                         std::string eos_token);

  // As FromGguf reads a template: the family detected from `jinja_source`,
  // the family's details read from it. InvalidArgument when not recognised.
  static absl::StatusOr<ChatTemplate> FromSource(std::string_view jinja_source,
                                                 std::string bos_token,
                                                 std::string eos_token);

  // Errors (InvalidArgument): an empty list, a role other than system / user /
  // assistant, and role orders the published template rejects (Gemma has no
  // system role; Llama 2, Mistral v1 / v3 and Gemma need user / assistant
  // alternation starting with user, after an optional first system message).
  absl::StatusOr<std::vector<ChatPiece>> Render(
      std::span<const ChatMessage> messages, bool add_generation_prompt) const;
  // Render()'s pieces concatenated.
  absl::StatusOr<std::string> RenderString(
      std::span<const ChatMessage> messages, bool add_generation_prompt) const;

  ChatTemplateKind kind() const { return kind_; }
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }

  // Llama 3.1+ "Today Date: ..." text. By default the template's own: the
  // current local date ("%d %b %Y") where the template calls strftime_now
  // (Llama 3.2), else its fixed fallback (Llama 3.1: "26 Jul 2024").
  void set_date_string(std::string date) { date_string_ = std::move(date); }

 private:
  ChatTemplate() = default;

  std::string TodayDate() const;

  ChatTemplateKind kind_ = ChatTemplateKind::kChatML;
  std::string bos_token_;
  std::string eos_token_;

  // kChatML: system prompt used when the first message is not a system one.
  std::string default_system_;
  // kLlama3: a system header with "Cutting Knowledge Date: ..." and
  // "Today Date: ..." lines (3.1+), else plain 3.0 turns.
  bool llama3_date_header_ = false;
  std::string llama3_knowledge_date_;
  std::string llama3_default_date_;
  bool llama3_current_date_ = false;
  std::optional<std::string> date_string_;
  // kMistralV3 / kMistralV7: spaces after [INST] etc. (false: tekken).
  bool mistral_spaces_ = true;
  // kPhi3: BOS first (Phi-3 mini), EOS when no generation prompt (3.5),
  // system messages with empty content dropped (3.5).
  bool phi3_bos_ = false;
  bool phi3_eos_ = true;
  bool phi3_skip_empty_system_ = true;
};

}  // namespace swiftlet
