// Rendering for each template family. Each Render* function follows its
// published Jinja template line by line for messages with roles system, user
// and assistant (tools are not supported); comments name the quirks kept for
// byte-exact output.
#include <string>
#include <string_view>
#include <vector>

#include "core/str_cat.h"
#include "text/chat_template.h"

namespace swiftlet {
namespace {

// Decodes the code point starting at s[i] (1 byte for invalid UTF-8).
char32_t DecodeAt(std::string_view s, size_t i, size_t* len) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    *len = 1;
    return 0xFFFD;
  }
  char32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
  for (size_t k = 1; k < n; ++k) {
    const auto cont = static_cast<unsigned char>(s[i + k]);
    if ((cont >> 6) != 2) {
      *len = 1;
      return 0xFFFD;
    }
    c = (c << 6) | (cont & 0x3F);
  }
  *len = n;
  return c;
}

// Python's str.isspace(), which Jinja's trim filter and str.strip() use.
bool IsPythonSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 ||
         c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

size_t LeadingSpaceBytes(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t len = 0;
    if (!IsPythonSpace(DecodeAt(s, i, &len))) break;
    i += len;
  }
  return i;
}

size_t TrailingSpaceBytes(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) >> 6) == 2 &&
           end - start < 4) {
      --start;
    }
    size_t len = 0;
    const char32_t c = DecodeAt(s, start, &len);
    if (start + len != end) {  // Not a whole code point: stop at the byte.
      break;
    }
    if (!IsPythonSpace(c)) break;
    end = start;
  }
  return s.size() - end;
}

// Jinja's `| trim` / Python's str.strip().
std::string_view PyStrip(std::string_view s) {
  s.remove_prefix(LeadingSpaceBytes(s));
  s.remove_suffix(TrailingSpaceBytes(s));
  return s;
}

// Collects pieces, merging neighbours of the same origin and dropping empty
// ones.
class Pieces {
 public:
  void Template(std::string_view text) { Add(text, false); }
  void User(std::string_view text) { Add(text, true); }
  void Append(std::vector<ChatPiece> more) {
    for (ChatPiece& p : more) Add(p.text, p.from_user);
  }
  // Python's strip() of the concatenation, applied across pieces.
  void Strip() {
    while (!pieces_.empty()) {
      std::string& t = pieces_.front().text;
      t.erase(0, LeadingSpaceBytes(t));
      if (!t.empty()) break;
      pieces_.erase(pieces_.begin());
    }
    while (!pieces_.empty()) {
      std::string& t = pieces_.back().text;
      t.resize(t.size() - TrailingSpaceBytes(t));
      if (!t.empty()) break;
      pieces_.pop_back();
    }
  }
  std::vector<ChatPiece> Take() { return std::move(pieces_); }

 private:
  void Add(std::string_view text, bool from_user) {
    if (text.empty()) return;
    if (!pieces_.empty() && pieces_.back().from_user == from_user) {
      pieces_.back().text.append(text);
    } else {
      pieces_.push_back({std::string(text), from_user});
    }
  }
  std::vector<ChatPiece> pieces_;
};

absl::Status AlternationError(std::string_view family, bool after_system) {
  return absl::InvalidArgumentError(StrCat(
      family, " chat template: ", after_system ? "after the optional system message, " : "",
      "conversation roles must alternate user/assistant/user/assistant/..."));
}

// Splits off an optional first system message: messages[1:] and its content.
std::span<const ChatMessage> SplitSystem(std::span<const ChatMessage> messages,
                                         const std::string** system) {
  *system = nullptr;
  if (messages.front().role == "system") {
    *system = &messages.front().content;
    return messages.subspan(1);
  }
  return messages;
}

}  // namespace

absl::StatusOr<std::vector<ChatPiece>> ChatTemplate::Render(
    std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  if (messages.empty()) {
    return absl::InvalidArgumentError("chat template: no messages to render");
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant") {
      return absl::InvalidArgumentError(
          StrCat("chat template: message ", i, " has role '", role,
                 "'; expected system, user or assistant"));
    }
  }
  const std::string_view family = ChatTemplateKindName(kind_);
  Pieces out;
  const std::string* system = nullptr;

  switch (kind_) {
    case ChatTemplateKind::kChatML: {
      if (messages.front().role != "system" && !default_system_.empty()) {
        out.Template(StrCat("<|im_start|>system\n", default_system_, "<|im_end|>\n"));
      }
      for (const ChatMessage& m : messages) {
        out.Template(StrCat("<|im_start|>", m.role, "\n"));
        out.User(m.content);
        out.Template("<|im_end|>\n");
      }
      if (add_generation_prompt) out.Template("<|im_start|>assistant\n");
      break;
    }

    case ChatTemplateKind::kLlama2: {
      // Llama-2-chat: the system block joins the first user message, and the
      // joined content is strip()ped as a whole. No generation prompt.
      const auto loop = SplitSystem(messages, &system);
      for (size_t i = 0; i < loop.size(); ++i) {
        const ChatMessage& m = loop[i];
        if ((m.role == "user") != (i % 2 == 0)) return AlternationError(family, false);
        Pieces content;
        if (i == 0 && system != nullptr) {
          content.Template("<<SYS>>\n");
          content.User(*system);
          content.Template("\n<</SYS>>\n\n");
        }
        content.User(m.content);
        content.Strip();
        if (m.role == "user") {
          out.Template(StrCat(bos_token_, "[INST] "));
          out.Append(content.Take());
          out.Template(" [/INST]");
        } else if (m.role == "assistant") {
          out.Template(" ");
          out.Append(content.Take());
          out.Template(StrCat(" ", eos_token_));
        }
        // A system message at an odd position passes the template's check
        // and then matches no branch: it is dropped.
      }
      break;
    }

    case ChatTemplateKind::kLlama3: {
      out.Template(bos_token_);
      std::span<const ChatMessage> loop = messages;
      if (llama3_date_header_) {
        // Llama 3.1+: the first system message goes into a header that is
        // always there.
        loop = SplitSystem(messages, &system);
        out.Template(StrCat("<|start_header_id|>system<|end_header_id|>\n\n",
                            "Cutting Knowledge Date: ", llama3_knowledge_date_, "\n",
                            "Today Date: ", TodayDate(), "\n\n"));
        if (system != nullptr) out.User(PyStrip(*system));
        out.Template("<|eot_id|>");
      }
      for (const ChatMessage& m : loop) {
        out.Template(StrCat("<|start_header_id|>", m.role, "<|end_header_id|>\n\n"));
        out.User(PyStrip(m.content));
        out.Template("<|eot_id|>");
      }
      if (add_generation_prompt) {
        out.Template("<|start_header_id|>assistant<|end_header_id|>\n\n");
      }
      break;
    }

    case ChatTemplateKind::kMistralV1:
    case ChatTemplateKind::kMistralV3: {
      const bool v1 = kind_ == ChatTemplateKind::kMistralV1;
      const auto loop = SplitSystem(messages, &system);
      for (size_t i = 0; i < loop.size(); ++i) {
        const ChatMessage& m = loop[i];
        if ((m.role == "user") != (i % 2 == 0)) return AlternationError(family, true);
        if (m.role == "system") {
          return absl::InvalidArgumentError(StrCat(
              family, " chat template: only user and assistant roles are supported, "
                      "with the exception of an initial optional system message"));
        }
      }
      out.Template(bos_token_);
      const std::string_view inst_open = v1 ? " [INST] " : mistral_spaces_ ? "[INST] " : "[INST]";
      const std::string_view inst_close = v1 ? " [/INST]" : "[/INST]";
      for (size_t i = 0; i < loop.size(); ++i) {
        const ChatMessage& m = loop[i];
        if (m.role == "user") {
          out.Template(inst_open);
          // v1 puts the system prompt in the first user turn; v3 in the last
          // message, and only when that is a user turn (else it is lost).
          const bool with_system =
              system != nullptr && (v1 ? i == 0 : i + 1 == loop.size());
          if (with_system) {
            out.User(*system);
            out.Template("\n\n");
          }
          out.User(m.content);
          out.Template(inst_close);
        } else if (v1) {
          out.Template(" ");
          out.User(m.content);
          out.Template(eos_token_);
        } else if (mistral_spaces_) {
          out.Template(" ");
          out.User(PyStrip(m.content));
          out.Template(eos_token_);
        } else {  // v3-tekken (Mistral Nemo).
          out.User(m.content);
          out.Template(eos_token_);
        }
      }
      break;
    }

    case ChatTemplateKind::kMistralV7: {
      const std::string_view space = mistral_spaces_ ? " " : "";
      out.Template(bos_token_);
      for (const ChatMessage& m : messages) {
        if (m.role == "user") {
          out.Template(StrCat("[INST]", space));
          out.User(m.content);
          out.Template("[/INST]");
        } else if (m.role == "system") {
          out.Template(StrCat("[SYSTEM_PROMPT]", space));
          out.User(m.content);
          out.Template("[/SYSTEM_PROMPT]");
        } else {
          out.Template(space);
          out.User(m.content);
          out.Template(eos_token_);
        }
      }
      break;
    }

    case ChatTemplateKind::kGemma: {
      if (messages.front().role == "system") {
        return absl::InvalidArgumentError(
            "gemma chat template: system role not supported");
      }
      out.Template(bos_token_);
      for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if ((m.role == "user") != (i % 2 == 0)) return AlternationError(family, false);
        // A system message at an odd position passes the check and is
        // rendered as a "system" turn, as the template does.
        out.Template(StrCat("<start_of_turn>",
                            m.role == "assistant" ? std::string_view("model") : m.role,
                            "\n"));
        out.User(PyStrip(m.content));
        out.Template("<end_of_turn>\n");
      }
      if (add_generation_prompt) out.Template("<start_of_turn>model\n");
      break;
    }

    case ChatTemplateKind::kPhi3: {
      if (phi3_bos_) out.Template(bos_token_);
      for (const ChatMessage& m : messages) {
        if (m.role == "system" && phi3_skip_empty_system_ && m.content.empty()) continue;
        out.Template(StrCat("<|", m.role, "|>\n"));
        out.User(m.content);
        out.Template("<|end|>\n");
      }
      if (add_generation_prompt) {
        out.Template("<|assistant|>\n");
      } else if (phi3_eos_) {
        out.Template(eos_token_);
      }
      break;
    }

    case ChatTemplateKind::kDeepSeek: {
      // The last system message, wherever it is, goes first.
      for (const ChatMessage& m : messages) {
        if (m.role == "system") system = &m.content;
      }
      out.Template(bos_token_);
      if (system != nullptr) out.User(*system);
      for (const ChatMessage& m : messages) {
        if (m.role == "user") {
          out.Template("<｜User｜>");
          out.User(m.content);
        } else if (m.role == "assistant") {
          // Earlier reasoning is dropped: only the text after the last
          // "</think>" is kept.
          std::string_view content = m.content;
          const size_t think = content.rfind("</think>");
          if (think != std::string_view::npos) {
            content.remove_prefix(think + std::string_view("</think>").size());
          }
          out.Template("<｜Assistant｜>");
          out.User(content);
          out.Template("<｜end▁of▁sentence｜>");
        }
      }
      if (add_generation_prompt) out.Template("<｜Assistant｜><think>\n");
      break;
    }
  }
  return out.Take();
}

absl::StatusOr<std::string> ChatTemplate::RenderString(
    std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  SWIFTLET_ASSIGN_OR_RETURN(std::vector<ChatPiece> pieces,
                            Render(messages, add_generation_prompt));
  std::string out;
  for (const ChatPiece& p : pieces) out += p.text;
  return out;
}

}  // namespace swiftlet
