#include "translate/languages.h"

#include <gtest/gtest.h>

namespace swiftlet::translate {
namespace {

TEST(LanguageTableTest, TheShippedTableKnowsTheStreamsLanguages) {
  const LanguageTable& t = LanguageTable::BuiltIn();
  EXPECT_GE(t.languages().size(), 30u);
  for (const char* code : {"en", "ja", "ko", "zh-Hans", "zh-Hant", "vi", "th", "id", "ms", "fil"}) {
    const Language* l = t.Find(code);
    ASSERT_NE(l, nullptr) << code;
    EXPECT_EQ(l->code, code);
    EXPECT_FALSE(l->english.empty());
    EXPECT_FALSE(l->native.empty());
  }
  // Any case; aliases name the canonical entry.
  EXPECT_EQ(t.Find("ZH-hant")->code, "zh-Hant");
  EXPECT_EQ(t.Find("zh")->code, "zh-Hans");
  EXPECT_EQ(t.Find("zh-TW")->code, "zh-Hant");
  EXPECT_EQ(t.Find("tl")->code, "fil");
  EXPECT_EQ(t.Find("xx"), nullptr);
  EXPECT_EQ(t.Find(""), nullptr);
}

TEST(LanguageTableTest, BadTablesAreRefusedNamingTheEntry) {
  EXPECT_FALSE(LanguageTable::Parse("not json").ok());
  EXPECT_FALSE(LanguageTable::Parse(R"({"languages": []})").ok());
  auto missing = LanguageTable::Parse(R"({"languages": [{"code": "en", "english": "English"}]})");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find("languages[0]"), std::string::npos);
  auto twice = LanguageTable::Parse(R"({"languages": [
      {"code": "en", "english": "English", "native": "English"},
      {"code": "fr", "english": "French", "native": "Français", "aliases": ["EN"]}]})");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(std::string(twice.status().message()).find("twice"), std::string::npos);
  EXPECT_FALSE(LanguageTable::Parse(R"({"languages": [{"code": "e n", "english": "E", "native": "E"}]})").ok());
}

}  // namespace
}  // namespace swiftlet::translate
