// The translation service against a scripted engine: a RequestQueue that
// records the groups submitted and answers them as the test says, so
// restoration, the glossary check, the cache, refusals and cancellation are
// checked without a model.
#include "translate/translation_service.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "gguf/gguf_file.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "translate/protected_spans.h"
#include "llama_spm_tokenizer.h"
#include "scripted_engine.h"

namespace swiftlet::translate {
namespace {


class TranslationServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tokenizer_ = LlamaSpmTokenizer();
    ASSERT_NE(tokenizer_, nullptr);
    chat_ = ChatTemplate::Of(ChatTemplateKind::kLlama2, "<s>", "</s>");
    service_ = std::make_unique<TranslationService>(engine_, *tokenizer_, chat_, LanguageTable::BuiltIn(), &cache_,
                                                    metrics_, TranslationServiceConfig{"m"}, &clock_);
  }

  struct Outcome {
    std::vector<api::Translation> items;
    std::optional<absl::StatusOr<api::TranslateResponse>> done;
    int64_t retry_after_ms = 0;
  };

  std::shared_ptr<TranslateJob> Start(const api::TranslateRequest& r, Outcome& out) {
    auto job = service_->Start(
        r, {clock_.NowNs(), ""}, [&out](const api::Translation& t) { out.items.push_back(t); },
        [&out](absl::StatusOr<api::TranslateResponse> resp, int64_t retry) {
          EXPECT_FALSE(out.done.has_value()) << "done twice";
          out.done = std::move(resp);
          out.retry_after_ms = retry;
        });
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : nullptr;
  }

  static api::TranslateRequest Request2x2() {
    api::TranslateRequest r;
    r.texts = {"@bob won 3 games", "gg"};
    r.target_languages = {"ja", "ko"};
    r.glossary.map = {{"games", "ゲーム"}};
    r.budget_ms = 800;
    return r;
  }

  FakeClock clock_{kNsPerSecond};
  ScriptedEngine engine_;
  std::unique_ptr<Tokenizer> tokenizer_;
  absl::StatusOr<ChatTemplate> chat_ = absl::UnknownError("unset");
  MemoryCache cache_{1 << 20, 3600 * kNsPerSecond, &clock_};
  TranslateMetrics metrics_;
  std::unique_ptr<TranslationService> service_;
};

TEST_F(TranslationServiceTest, OneGroupPerTextPlaceholdersRestoredAndChecked) {
  Outcome out;
  auto job = Start(Request2x2(), out);
  ASSERT_NE(job, nullptr);
  ASSERT_EQ(engine_.submitted.size(), 2u);
  const Request& g0 = engine_.submitted[0];
  EXPECT_EQ(g0.branches.size(), 2u);
  EXPECT_EQ(g0.options.n, 2);
  EXPECT_EQ(g0.options.sampling.temperature, 0);
  EXPECT_EQ(g0.options.stop, (std::vector<std::string>{"\n"}));
  EXPECT_EQ(g0.options.targets.ttft_ns, 400 * kNsPerMs);  // Half the budget.
  // The comment reached the model masked: @bob and 3 are placeholders.
  std::vector<int32_t> whole = g0.prompt;
  whole.insert(whole.end(), g0.branches[0].begin(), g0.branches[0].end());
  const std::string prompt = tokenizer_->Decode(whole);
  EXPECT_NE(prompt.find(Placeholder(1) + " won " + Placeholder(2) + " games"), std::string::npos) << prompt;
  EXPECT_EQ(prompt.find("@bob"), std::string::npos);

  clock_.Advance(300 * kNsPerMs);
  // ja keeps both marks and the fixed term; ko loses one mark.
  engine_.Answer(0, {" " + Placeholder(1) + "が" + Placeholder(2) + "ゲーム勝った\n", Placeholder(2) + "승"});
  clock_.Advance(600 * kNsPerMs);
  engine_.Answer(1, {"gg", "gg"});
  ASSERT_TRUE(out.done.has_value());
  ASSERT_TRUE(out.done->ok()) << out.done->status();
  const api::TranslateResponse& r = **out.done;
  ASSERT_EQ(r.translations.size(), 4u);
  EXPECT_EQ(r.translations[0].language, "ja");
  EXPECT_EQ(r.translations[0].text, "@bobが3ゲーム勝った");
  EXPECT_TRUE(r.translations[0].glossary_ok);
  EXPECT_DOUBLE_EQ(r.translations[0].latency_ms, 300);
  EXPECT_FALSE(r.translations[0].late);
  EXPECT_EQ(r.translations[1].text, "3승");
  EXPECT_FALSE(r.translations[1].glossary_ok);
  EXPECT_EQ(r.translations[2].index, 1);
  EXPECT_TRUE(r.translations[2].late);  // 900 ms against an 800 ms budget.
  EXPECT_EQ(r.prompt_tokens, 20);
  EXPECT_EQ(out.items.size(), 4u);  // Each reported as it finished.
  EXPECT_EQ(metrics_.glossary_failures_total.Value(), 1u);
}

TEST_F(TranslationServiceTest, FaithfulTranslationsComeBackFromTheCache) {
  Outcome first;
  Start(Request2x2(), first);
  engine_.Answer(0, {Placeholder(1) + Placeholder(2) + "ゲーム", "no marks"});
  engine_.Answer(1, {"ジジ", "지지"});
  ASSERT_TRUE(first.done.has_value() && first.done->ok());
  // Again, with "  gg " spelled differently: three of four are cached (the
  // flagged ko translation of text 0 was not kept), one group of one.
  api::TranslateRequest again = Request2x2();
  again.texts[1] = "  gg ";
  Outcome second;
  Start(again, second);
  ASSERT_EQ(engine_.submitted.size(), 3u);
  EXPECT_TRUE(engine_.submitted[2].branches.empty());  // One language: a plain request.
  EXPECT_EQ(second.items.size(), 3u);
  for (const auto& t : second.items) EXPECT_TRUE(t.cached);
  engine_.Answer(2, {Placeholder(2) + " " + Placeholder(1)});
  ASSERT_TRUE(second.done.has_value() && second.done->ok());
  EXPECT_EQ((**second.done).translations[1].text, "3 @bob");
  EXPECT_EQ((**second.done).translations[2].text, "ジジ");
  EXPECT_TRUE((**second.done).translations[2].cached);
  EXPECT_EQ(cache_.stats().hits, 3u);
}

TEST_F(TranslationServiceTest, ARefusedGroupFailsTheWholeCallAndCancelsTheOthers) {
  engine_.refuse_after = 1;
  engine_.refuse_from = RefusalReason::kTtftTarget;
  Outcome out;
  Start(Request2x2(), out);
  ASSERT_TRUE(out.done.has_value());
  EXPECT_TRUE(absl::IsResourceExhausted(out.done->status()));
  EXPECT_EQ(out.retry_after_ms, 1500);
  EXPECT_EQ(engine_.cancelled, (std::vector<uint64_t>{1}));
}

TEST_F(TranslationServiceTest, UnknownLanguagesAndCancellation) {
  api::TranslateRequest bad = Request2x2();
  bad.target_languages = {"ja", "klingon"};
  auto job = service_->Start(bad, {0, ""}, nullptr, nullptr);
  ASSERT_FALSE(job.ok());
  EXPECT_NE(std::string(job.status().message()).find("target_languages[1]"), std::string::npos);
  bad.target_languages = {"zh-TW", "zh-Hant"};  // An alias and its language.
  EXPECT_FALSE(service_->Start(bad, {0, ""}, nullptr, nullptr).ok());

  Outcome out;
  auto live = Start(Request2x2(), out);
  live->Cancel();
  EXPECT_EQ(engine_.cancelled, (std::vector<uint64_t>{1, 2}));
  engine_.Answer(0, {"", ""}, FinishReason::kCancelled);
  engine_.Answer(1, {"", ""}, FinishReason::kCancelled);
  ASSERT_TRUE(out.done.has_value());
  EXPECT_TRUE(absl::IsCancelled(out.done->status()));
  EXPECT_TRUE(out.items.empty());
}

}  // namespace
}  // namespace swiftlet::translate
