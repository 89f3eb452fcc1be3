#include "translate/prompt_layout.h"

#include <algorithm>

#include "core/str_cat.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "translate/languages.h"
#include "translate/protected_spans.h"

namespace swiftlet::translate {

std::string TargetCue(const Language& target) { return StrCat(target.english, ": "); }

std::string TranslationInstruction(const TranslationPromptSpec& spec) {
  std::string s =
      "You translate comments from a live video stream for viewers who speak another language. "
      "Translate the comment below";
  if (spec.source != nullptr) s += StrCat(" from ", spec.source->english);
  s += " into the language your answer starts with. Keep its tone, slang and emoji. Answer with the "
       "translation only, on one line.";
  if (spec.has_placeholders) {
    s += StrCat(" Marks such as ", Placeholder(1),
                " stand for names, links and numbers: copy each one unchanged, where it belongs.");
  }
  if (!spec.fixed_terms.empty()) {
    s += " Always translate these terms as given:";
    for (const auto& [term, translation] : spec.fixed_terms) s += StrCat(" \"", term, "\" as \"", translation, "\";");
  }
  s += StrCat("\n\nComment:\n", spec.masked_text);
  return s;
}

absl::StatusOr<GroupPrompt> LayoutTranslation(const ChatTemplate& chat, const Tokenizer& tokenizer,
                                              const TranslationPromptSpec& spec) {
  if (spec.targets.empty()) return absl::InvalidArgumentError("no target language");
  const ChatMessage turn{"user", TranslationInstruction(spec)};
  SWIFTLET_ASSIGN_OR_RETURN(std::vector<ChatPiece> pieces, chat.Render({&turn, 1}, /*add_generation_prompt=*/true));
  std::vector<TextPiece> common_parts;
  for (const ChatPiece& p : pieces) common_parts.push_back({p.text, !p.from_user});
  std::vector<std::vector<int32_t>> prompts;
  for (const Language* target : spec.targets) {
    std::vector<TextPiece> parts = common_parts;
    parts.push_back({TargetCue(*target), /*parse_special=*/false});
    prompts.push_back(tokenizer.EncodeMixed(parts, /*add_bos=*/false));
    if (prompts.back().empty()) return absl::InvalidArgumentError("the translation prompt has no tokens");
  }
  size_t common = prompts.front().size();
  for (const auto& p : prompts) {
    common = std::min(common, p.size());
    const auto diff = std::mismatch(prompts.front().begin(), prompts.front().begin() + common, p.begin());
    common = static_cast<size_t>(diff.first - prompts.front().begin());
  }
  // Every branch keeps at least its last token (the one whose logits start
  // its translation), and the shared part at least one.
  for (const auto& p : prompts) common = std::min(common, p.size() - 1);
  common = std::max<size_t>(common, 1);
  GroupPrompt g;
  g.shared.assign(prompts.front().begin(), prompts.front().begin() + static_cast<std::ptrdiff_t>(common));
  for (const auto& p : prompts) {
    if (p.size() <= common) return absl::InternalError("a translation prompt is shorter than the shared part");
    g.branches.emplace_back(p.begin() + static_cast<std::ptrdiff_t>(common), p.end());
  }
  return g;
}

}  // namespace swiftlet::translate
