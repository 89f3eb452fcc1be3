// The prompt of one comment into K languages, laid out so that everything
// but the target language is shared:
//
//   [template head][instruction + glossary][comment][template tail][target language cue]
//
// The instruction and the comment are one user turn of the model's chat
// template (every family has one; not all have a system turn); the target
// language opens the assistant's answer ("Japanese: "), so the template's
// closing markers stay in the shared part and a branch is a few tokens
// whatever the template. Each language's prompt is tokenized whole, and the
// group's shared part is the longest common token prefix of the K prompts,
// so a tokenizer merging across the boundary cannot make a branch differ
// from the prompt it stands for.
//
// Thread-safe (pure functions of their arguments).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace swiftlet {
class ChatTemplate;  // text/chat_template.h
class Tokenizer;     // text/tokenizer.h
}  // namespace swiftlet

namespace swiftlet::translate {

struct Language;  // translate/languages.h

struct TranslationPromptSpec {
  std::string masked_text;        // The comment, its protected spans as placeholders.
  const Language* source = nullptr;  // nullptr: the model detects it.
  std::vector<const Language*> targets;  // 1..16, distinct.
  std::vector<std::pair<std::string, std::string>> fixed_terms;  // Glossary map.
  bool has_placeholders = false;
};

struct GroupPrompt {
  std::vector<int32_t> shared;                   // Common to every language.
  std::vector<std::vector<int32_t>> branches;    // Per target, non-empty; shared + branches[i] is its prompt.
};

// The user turn's text (instruction, glossary and comment), the same for
// every target.
std::string TranslationInstruction(const TranslationPromptSpec& spec);
// What opens the answer for one target: its English name and ": ".
std::string TargetCue(const Language& target);

absl::StatusOr<GroupPrompt> LayoutTranslation(const ChatTemplate& chat, const Tokenizer& tokenizer,
                                              const TranslationPromptSpec& spec);

}  // namespace swiftlet::translate
