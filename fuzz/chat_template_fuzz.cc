// libFuzzer target for chat-template rendering (text/chat_template.h). The
// input is a conversation: byte 0 holds flags, the rest is split at 0x1E
// into messages whose first byte picks the role (system, user, assistant,
// or a role no template knows). Every template kind renders it. For any
// input:
//   - Render never crashes and fails only with InvalidArgument;
//   - RenderString is the pieces joined, and rendering is deterministic;
//   - the text marked as the user's (from_user) is no longer than the
//     messages' contents together: template text never passes as user
//     text, and no content is duplicated into the prompt.
// With flag bit 1 the input is instead a Jinja template source: detecting
// its family, and rendering a fixed conversation with it, must not crash.
// Any violation aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "text/chat_template.h"

namespace {

using swiftlet::ChatMessage;
using swiftlet::ChatPiece;
using swiftlet::ChatTemplate;
using swiftlet::ChatTemplateKind;

constexpr ChatTemplateKind kKinds[] = {
    ChatTemplateKind::kChatML,    ChatTemplateKind::kLlama2,    ChatTemplateKind::kLlama3,
    ChatTemplateKind::kMistralV1, ChatTemplateKind::kMistralV3, ChatTemplateKind::kMistralV7,
    ChatTemplateKind::kGemma,     ChatTemplateKind::kPhi3,      ChatTemplateKind::kDeepSeek,
};

[[noreturn]] void Fail(ChatTemplateKind kind, const char* what) {
  std::fprintf(stderr, "chat_template_fuzz: %s: %s\n",
               std::string(swiftlet::ChatTemplateKindName(kind)).c_str(), what);
  std::abort();
}

std::vector<ChatMessage> Conversation(std::string_view input) {
  static const char* const kRoles[] = {"system", "user", "assistant", "tool"};
  std::vector<ChatMessage> messages;
  while (!input.empty() && messages.size() < 64) {
    const size_t end = input.find('\x1e');
    std::string_view one = input.substr(0, end);
    if (!one.empty()) {
      messages.push_back({kRoles[static_cast<unsigned char>(one[0]) % 4], std::string(one.substr(1))});
    }
    if (end == std::string_view::npos) break;
    input.remove_prefix(end + 1);
  }
  return messages;
}

void RenderAll(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages, bool prompt) {
  const ChatTemplateKind kind = tmpl.kind();
  auto pieces = tmpl.Render(messages, prompt);
  auto text = tmpl.RenderString(messages, prompt);
  if (pieces.ok() != text.ok()) Fail(kind, "Render and RenderString disagree");
  if (!pieces.ok()) {
    if (!absl::IsInvalidArgument(pieces.status())) Fail(kind, "an error other than InvalidArgument");
    return;
  }
  std::string joined;
  size_t user_bytes = 0;
  for (const ChatPiece& p : *pieces) {
    joined += p.text;
    if (p.from_user) user_bytes += p.text.size();
  }
  if (joined != *text) Fail(kind, "RenderString is not the pieces joined");
  size_t content_bytes = 0;
  for (const ChatMessage& m : messages) content_bytes += m.content.size();
  if (user_bytes > content_bytes) Fail(kind, "more user text than the messages hold");
  auto again = tmpl.Render(messages, prompt);
  if (!again.ok() || *again != *pieces) Fail(kind, "rendering is not deterministic");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const bool prompt = (flags & 1) != 0;
  // BOS/EOS as real vocabularies spell them, or empty (files without them).
  const std::string bos = (flags & 4) ? "" : "<s>";
  const std::string eos = (flags & 4) ? "" : "</s>";
  if (flags & 2) {
    (void)swiftlet::DetectChatTemplate(rest);
    auto tmpl = ChatTemplate::FromSource(rest, bos, eos);
    if (tmpl.ok()) {
      tmpl->set_date_string("01 Jan 2025");
      const std::vector<ChatMessage> fixed = {{"system", "Be brief."}, {"user", "Hi"}};
      RenderAll(*tmpl, fixed, prompt);
    }
    return 0;
  }
  const std::vector<ChatMessage> messages = Conversation(rest);
  for (ChatTemplateKind kind : kKinds) {
    ChatTemplate tmpl = ChatTemplate::Of(kind, bos, eos);
    tmpl.set_date_string("01 Jan 2025");  // Not the clock: a crash must replay.
    RenderAll(tmpl, messages, prompt);
  }
  return 0;
}
