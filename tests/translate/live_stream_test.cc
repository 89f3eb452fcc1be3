// A live stream's rules against a scripted engine and a fake clock: order
// per language, drops instead of late results, a bounded queue, a cap on
// work in flight per stream, and an answer for every comment.
#include "translate/live_stream.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "api/errors.h"
#include "api/translate_codec.h"
#include "gguf/gguf_file.h"
#include "llama_spm_tokenizer.h"
#include "scripted_engine.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace swiftlet::translate {
namespace {


class LiveStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tokenizer_ = LlamaSpmTokenizer();
    ASSERT_NE(tokenizer_, nullptr);
    chat_ = ChatTemplate::Of(ChatTemplateKind::kLlama2, "<s>", "</s>");
    service_ = std::make_unique<TranslationService>(engine_, *tokenizer_, chat_, LanguageTable::BuiltIn(), nullptr,
                                                    metrics_, TranslationServiceConfig{"m"}, &clock_);
  }

  std::shared_ptr<LiveStream> Open(LiveStreamOptions o, std::vector<api::StreamResult>* sent) {
    return LiveStream::Create(*service_, std::move(o), [sent](std::string message) {
      auto r = api::ParseStreamResult(message);
      ASSERT_TRUE(r.ok()) << message;
      sent->push_back(*r);
    });
  }

  static LiveStreamOptions JaKo() {
    LiveStreamOptions o;
    o.languages = {"ja", "ko"};
    o.budget_ms = 800;
    o.max_in_flight = 4;
    return o;
  }

  static std::string Comment(const std::string& id, const std::string& text) {
    return api::SerializeStreamComment({id, text});
  }

  FakeClock clock_{kNsPerSecond};
  ScriptedEngine engine_;
  std::unique_ptr<Tokenizer> tokenizer_;
  absl::StatusOr<ChatTemplate> chat_ = absl::UnknownError("unset");
  TranslateMetrics metrics_;
  std::unique_ptr<TranslationService> service_;
};

TEST_F(LiveStreamTest, EachLanguageInCommentOrder) {
  std::vector<api::StreamResult> sent;
  auto s = Open(JaKo(), &sent);
  s->OnMessage(Comment("a", "first"));
  s->OnMessage(Comment("b", "second"));
  ASSERT_EQ(engine_.submitted.size(), 2u);
  // b finishes first: nothing goes out until a's languages have.
  engine_.Answer(1, {"B-ja", "B-ko"});
  EXPECT_TRUE(sent.empty());
  engine_.Answer(0, {"A-ja", "A-ko"});
  ASSERT_EQ(sent.size(), 4u);
  std::map<std::string, std::vector<std::string>> per_language;
  for (const auto& r : sent) per_language[r.language].push_back(r.id + ":" + r.text);
  EXPECT_EQ(per_language["ja"], (std::vector<std::string>{"a:A-ja", "b:B-ja"}));
  EXPECT_EQ(per_language["ko"], (std::vector<std::string>{"a:A-ko", "b:B-ko"}));
}

TEST_F(LiveStreamTest, NeverALateResultButADropNotice) {
  std::vector<api::StreamResult> sent;
  auto s = Open(JaKo(), &sent);
  s->OnMessage(Comment("a", "first"));
  s->OnMessage(Comment("b", "second"));
  clock_.Advance(300 * kNsPerMs);
  engine_.Answer(1, {"B-ja", "B-ko"});  // On time, but waits behind a.
  clock_.Advance(600 * kNsPerMs);       // Both past their 800 ms budget now.
  s->Tick();                            // a's work is cancelled...
  EXPECT_EQ(engine_.cancelled, (std::vector<uint64_t>{1}));
  engine_.Answer(0, {"", ""}, FinishReason::kCancelled);
  ASSERT_EQ(sent.size(), 4u);
  for (const auto& r : sent) {
    EXPECT_EQ(r.dropped, "late") << r.id << " " << r.language;
    EXPECT_TRUE(r.text.empty());
  }
  EXPECT_EQ(metrics_.dropped_late_total.Value(), 4u);
}

TEST_F(LiveStreamTest, AFullQueueDropsItsOldestWithNotice) {
  LiveStreamOptions o = JaKo();
  o.max_in_flight = 1;
  o.max_queue = 2;
  std::vector<api::StreamResult> sent;
  auto s = Open(o, &sent);
  for (const char* id : {"c0", "c1", "c2", "c3", "c4"}) s->OnMessage(Comment(id, id));
  // c0 runs; c1 and c2 waited and were pushed out by c3 and c4.
  ASSERT_EQ(engine_.submitted.size(), 1u);
  EXPECT_EQ(s->queued(), 2u);
  EXPECT_EQ(metrics_.dropped_overflow_total.Value(), 2u);
  engine_.Answer(0, {"x", "y"});
  ASSERT_EQ(engine_.submitted.size(), 2u);  // c3 starts.
  engine_.Answer(1, {"x", "y"});
  engine_.Answer(2, {"x", "y"});
  // Every comment answered once per language, in order.
  std::map<std::string, std::vector<std::string>> per_language;
  for (const auto& r : sent) per_language[r.language].push_back(r.id + (r.dropped.empty() ? "" : "/" + r.dropped));
  const std::vector<std::string> want = {"c0", "c1/overflow", "c2/overflow", "c3", "c4"};
  EXPECT_EQ(per_language["ja"], want);
  EXPECT_EQ(per_language["ko"], want);
}

TEST_F(LiveStreamTest, AChattyStreamHoldsOnlyItsShareOfTheEngine) {
  LiveStreamOptions o = JaKo();
  o.max_in_flight = 2;
  std::vector<api::StreamResult> chatty_sent, quiet_sent;
  auto chatty = Open(o, &chatty_sent);
  auto quiet = Open(o, &quiet_sent);
  for (int i = 0; i < 20; ++i) chatty->OnMessage(Comment("c" + std::to_string(i), "spam"));
  quiet->OnMessage(Comment("q", "hello"));
  // Two of the chatty stream's comments, then the quiet one's, are in the
  // engine: the quiet comment is not behind twenty.
  ASSERT_EQ(engine_.submitted.size(), 3u);
  engine_.Answer(2, {"Q-ja", "Q-ko"});
  ASSERT_EQ(quiet_sent.size(), 2u);
  EXPECT_EQ(quiet_sent[0].text, "Q-ja");
}

TEST_F(LiveStreamTest, BadMessagesGetAnErrorAndTheStreamGoesOn) {
  std::vector<api::StreamResult> sent;
  auto s = Open(JaKo(), &sent);
  s->OnMessage("not json");
  s->OnMessage(R"({"id": "x"})");
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_FALSE(sent[0].error.empty());
  EXPECT_NE(sent[1].error.find("text"), std::string::npos);
  s->OnMessage(Comment("ok", "fine"));
  EXPECT_EQ(engine_.submitted.size(), 1u);
  s->Close();
  EXPECT_EQ(engine_.cancelled, (std::vector<uint64_t>{1}));
  engine_.Answer(0, {"", ""}, FinishReason::kCancelled);
  EXPECT_EQ(sent.size(), 2u);  // Nothing after Close.
  EXPECT_EQ(metrics_.streams_active.Value(), 0);
}

TEST(LiveStreamQueryTest, ParametersCheckedAndNamed) {
  const LanguageTable& t = LanguageTable::BuiltIn();
  auto o = ParseLiveStreamQuery("languages=en,JA,zh-TW&budget_ms=500&keep=Swift%20Let,%40host&max_queue=8", t);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->languages, (std::vector<std::string>{"en", "ja", "zh-Hant"}));
  EXPECT_EQ(o->budget_ms, 500);
  EXPECT_EQ(o->glossary.keep, (std::vector<std::string>{"Swift Let", "@host"}));
  EXPECT_EQ(o->max_queue, 8u);
  for (const auto& [query, param] : std::vector<std::pair<std::string, std::string>>{
           {"budget_ms=5", "languages"},
           {"languages=en,xx", "languages"},
           {"languages=zh,zh-Hans", "languages"},
           {"languages=en&budget_ms=0", "budget_ms"},
           {"languages=en&budget_ms=abc", "budget_ms"},
           {"languages=en&max_queue=100000", "max_queue"},
           {"languages=en&source=zz", "source"},
           {"languages=en&keep=%zz", "keep"},
           {"languages=en&keep=%4", "keep"}}) {
    auto bad = ParseLiveStreamQuery(query, t);
    ASSERT_FALSE(bad.ok()) << query;
    EXPECT_EQ(api::ErrorParam(bad.status()), param) << query;
  }
}

}  // namespace
}  // namespace swiftlet::translate
