#include "translate/prompt_layout.h"

#include <gtest/gtest.h>

#include <memory>

#include "llama_spm_tokenizer.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "translate/languages.h"
#include "translate/protected_spans.h"

namespace swiftlet::translate {
namespace {

TEST(PromptLayoutTest, SharedPartPlusEachBranchIsThatLanguagesWholePrompt) {
  auto tokenizer = LlamaSpmTokenizer();
  ASSERT_NE(tokenizer, nullptr);
  const LanguageTable& langs = LanguageTable::BuiltIn();
  for (ChatTemplateKind kind : {ChatTemplateKind::kLlama2, ChatTemplateKind::kChatML, ChatTemplateKind::kGemma}) {
    const ChatTemplate chat = ChatTemplate::Of(kind, "<s>", "</s>");
    // A 20-word comment, with spans.
    const Masked masked = Protect(
        "@rin this stage is amazing the lights the crowd the song everyone sing along now 🎉 see you at 9 tonight",
        {});
    TranslationPromptSpec spec;
    spec.masked_text = masked.text;
    spec.has_placeholders = true;
    spec.fixed_terms = {{"stage", "舞台"}};
    for (const char* code : {"ja", "en", "zh-Hant", "ko"}) spec.targets.push_back(langs.Find(code));
    auto g = LayoutTranslation(chat, *tokenizer, spec);
    ASSERT_TRUE(g.ok()) << g.status();
    ASSERT_EQ(g->branches.size(), 4u);
    size_t total = g->shared.size();
    for (size_t i = 0; i < spec.targets.size(); ++i) {
      // Independently: the rendered text of that one prompt, tokenized whole.
      const ChatMessage turn{"user", TranslationInstruction(spec)};
      auto text = chat.RenderString({&turn, 1}, true);
      ASSERT_TRUE(text.ok());
      const std::string whole_text = *text + spec.targets[i]->english + ": ";
      std::vector<int32_t> whole = g->shared;
      whole.insert(whole.end(), g->branches[i].begin(), g->branches[i].end());
      EXPECT_EQ(whole, tokenizer->EncodeWithSpecial(whole_text, false)) << ChatTemplateKindName(kind) << " " << i;
      EXPECT_FALSE(g->branches[i].empty());
      total += g->branches[i].size();
    }
    // Issue 22: four languages cost at most 1.3x the prompt of one.
    const size_t one = g->shared.size() + g->branches[0].size();
    EXPECT_LE(static_cast<double>(total), 1.3 * static_cast<double>(one)) << ChatTemplateKindName(kind);
  }
}

TEST(PromptLayoutTest, TheInstructionSaysWhatTheModelMustDo) {
  const LanguageTable& langs = LanguageTable::BuiltIn();
  TranslationPromptSpec spec;
  spec.masked_text = "hi " + Placeholder(1);
  spec.source = langs.Find("en");
  spec.has_placeholders = true;
  spec.fixed_terms = {{"gift", "礼物"}};
  const std::string s = TranslationInstruction(spec);
  for (const char* part : {"from English", "\"gift\" as \"礼物\"", "⟦1⟧", "hi ⟦1⟧"}) {
    EXPECT_NE(s.find(part), std::string::npos) << part;
  }
  // The comment ends the user turn; the target opens the answer.
  EXPECT_EQ(s.rfind("hi ⟦1⟧"), s.size() - std::string("hi ⟦1⟧").size());
  EXPECT_EQ(TargetCue(*langs.Find("zh-Hans")), "Simplified Chinese: ");
}

}  // namespace
}  // namespace swiftlet::translate
