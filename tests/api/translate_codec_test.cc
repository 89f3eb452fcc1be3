#include "api/translate_codec.h"

#include <gtest/gtest.h>

#include <string>

#include "api/errors.h"

namespace swiftlet::api {
namespace {

std::string ParamOf(std::string_view body) {
  auto r = ParseTranslateRequest(body);
  EXPECT_FALSE(r.ok()) << body;
  return r.ok() ? "" : ErrorParam(r.status());
}

TEST(TranslateCodecTest, ParsesTheWholeRequest) {
  auto r = ParseTranslateRequest(R"({"model": "m", "texts": ["hi", "yo"], "target_languages": ["ja", "zh-Hant"],
      "source_language": "en", "glossary": {"keep": ["Swiftlet"], "map": {"stream": "直播"}},
      "budget_ms": 800, "max_tokens": 40, "stream_id": "s1", "priority": "batch", "unknown": 1})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->texts, (std::vector<std::string>{"hi", "yo"}));
  EXPECT_EQ(r->target_languages, (std::vector<std::string>{"ja", "zh-Hant"}));
  EXPECT_EQ(*r->source_language, "en");
  EXPECT_EQ(r->glossary.keep, (std::vector<std::string>{"Swiftlet"}));
  ASSERT_EQ(r->glossary.map.size(), 1u);
  EXPECT_EQ(r->glossary.map[0].first, "stream");
  EXPECT_EQ(r->glossary.map[0].second, "直播");
  EXPECT_EQ(*r->budget_ms, 800);
  EXPECT_EQ(*r->max_tokens, 40);
  EXPECT_EQ(*r->stream_id, "s1");
  EXPECT_EQ(r->priority, Priority::kBatch);
  auto again = ParseTranslateRequest(SerializeTranslateRequest(*r));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *r);
}

TEST(TranslateCodecTest, EveryBadFieldIsNamed) {
  EXPECT_EQ(ParamOf(R"({"target_languages": ["ja"]})"), "texts");
  EXPECT_EQ(ParamOf(R"({"texts": [], "target_languages": ["ja"]})"), "texts");
  EXPECT_EQ(ParamOf(R"({"texts": ["a", ""], "target_languages": ["ja"]})"), "texts[1]");
  EXPECT_EQ(ParamOf(R"({"texts": ["a", 3], "target_languages": ["ja"]})"), "texts[1]");
  EXPECT_EQ(ParamOf(R"({"texts": "a", "target_languages": ["ja"]})"), "texts");
  EXPECT_EQ(ParamOf(R"({"texts": ["a"]})"), "target_languages");
  EXPECT_EQ(ParamOf(R"({"texts": ["a"], "target_languages": ["ja", "ja"]})"), "target_languages[1]");
  EXPECT_EQ(ParamOf(R"({"texts": ["a"], "target_languages": ["j a"]})"), "target_languages[0]");
  EXPECT_EQ(ParamOf(R"({"texts": ["a"], "target_languages": ["ja"], "source_language": "e/n"})"),
            "source_language");
  EXPECT_EQ(ParamOf(R"({"texts": ["a"], "target_languages": ["ja"], "budget_ms": 0})"), "budget_ms");
  EXPECT_EQ(ParamOf(R"({"texts": ["a"], "target_languages": ["ja"], "max_tokens": 5000})"), "max_tokens");
  EXPECT_EQ(ParamOf(R"({"texts": ["a"], "target_languages": ["ja"], "glossary": {"keep": [1]}})"),
            "glossary.keep[0]");
  EXPECT_EQ(ParamOf(R"({"texts": ["a"], "target_languages": ["ja"], "glossary": {"map": {"a": 2}}})"),
            "glossary.map.a");
  EXPECT_EQ(ParamOf(R"({"texts": ["a"], "target_languages": ["ja"], "priority": "urgent"})"), "priority");
  // Bounds: item counts and text length.
  std::string many = R"({"target_languages": ["ja"], "texts": [)";
  for (size_t i = 0; i <= kMaxTranslateTexts; ++i) many += std::string(i ? "," : "") + "\"x\"";
  EXPECT_EQ(ParamOf(many + "]}"), "texts");
  std::string langs = R"({"texts": ["a"], "target_languages": [)";
  for (size_t i = 0; i <= kMaxTranslateLanguages; ++i) langs += std::string(i ? "," : "") + "\"l" + std::to_string(i) + "\"";
  EXPECT_EQ(ParamOf(langs + "]}"), "target_languages");
  const std::string long_text(kMaxTranslateTextBytes + 1, 'a');
  EXPECT_EQ(ParamOf(R"({"texts": [")" + long_text + R"("], "target_languages": ["ja"]})"), "texts[0]");
}

TEST(TranslateCodecTest, ResponseRoundTrip) {
  TranslateResponse r;
  r.model = "m";
  r.translations.push_back({0, "ja", "こんにちは", false, 12.5, true, false});
  r.translations.push_back({0, "en", "hello", true, 0.25, false, true});
  r.prompt_tokens = 100;
  r.completion_tokens = 20;
  r.cached_tokens = 60;
  auto back = ParseTranslateResponse(SerializeTranslateResponse(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, r);
}

TEST(TranslateCodecTest, StreamMessages) {
  auto c = ParseStreamComment(R"({"id": "c-1", "text": "so good 😀"})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->id, "c-1");
  EXPECT_EQ(ParseStreamComment(R"({"id": 42, "text": "x"})")->id, "42");
  EXPECT_EQ(ErrorParam(ParseStreamComment(R"({"text": "x"})").status()), "id");
  EXPECT_EQ(ErrorParam(ParseStreamComment(R"({"id": "a", "text": ""})").status()), "text");
  EXPECT_FALSE(ParseStreamComment("not json").ok());
  EXPECT_FALSE(ParseStreamComment(R"([1, 2])").ok());
  StreamResult result{"c-1", "ja", "すごい", 120.5, true, "", ""};
  EXPECT_EQ(*ParseStreamResult(SerializeStreamResult(result)), result);
  StreamResult drop{"c-2", "ko", "", 0, true, "late", ""};
  EXPECT_EQ(*ParseStreamResult(SerializeStreamResult(drop)), drop);
}

TEST(TranslateCodecTest, LanguageLists) {
  EXPECT_EQ(*ParseLanguageList("en,ja,zh-Hant", "languages"), (std::vector<std::string>{"en", "ja", "zh-Hant"}));
  EXPECT_FALSE(ParseLanguageList("", "languages").ok());
  EXPECT_FALSE(ParseLanguageList("en,,ja", "languages").ok());
  EXPECT_FALSE(ParseLanguageList("en,en", "languages").ok());
  EXPECT_EQ(ErrorParam(ParseLanguageList("en,j!", "languages").status()), "languages");
}

}  // namespace
}  // namespace swiftlet::api
