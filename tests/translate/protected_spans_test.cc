#include "translate/protected_spans.h"

#include <gtest/gtest.h>

namespace swiftlet::translate {
namespace {

std::string P(size_t n) { return Placeholder(n); }

TEST(ProtectedSpansTest, HandlesTagsUrlsNumbersEmojiAndKeepTerms) {
  const Masked m = Protect("@mei_li 看 Swiftlet #LiveNow https://ex.com/a?b=1. 在 12:30 送了 1,000 🎁👍🏽!",
                           {"Swiftlet"});
  EXPECT_EQ(m.spans, (std::vector<std::string>{"@mei_li", "Swiftlet", "#LiveNow", "https://ex.com/a?b=1", "12:30",
                                               "1,000", "🎁👍🏽"}));
  EXPECT_EQ(m.text, P(1) + " 看 " + P(2) + " " + P(3) + " " + P(4) + ". 在 " + P(5) + " 送了 " + P(6) + " " + P(7) + "!");
}

TEST(ProtectedSpansTest, LongerKeepTermsWinAndWordsKeepTheirDigits) {
  const Masked m = Protect("Big Bang Theory fans, and Big Bang too; mp3 and v2 stay", {"Big Bang", "Big Bang Theory"});
  EXPECT_EQ(m.spans, (std::vector<std::string>{"Big Bang Theory", "Big Bang"}));
  EXPECT_EQ(m.text, P(1) + " fans, and " + P(2) + " too; mp3 and v2 stay");
  // A ZWJ family and a flag are one emoji each.
  EXPECT_EQ(Protect("👨‍👩‍👧 🇭🇰", {}).spans, (std::vector<std::string>{"👨‍👩‍👧", "🇭🇰"}));
}

TEST(ProtectedSpansTest, AForgedPlaceholderIsItselfProtected) {
  const Masked m = Protect("look ⟦1⟧ here", {});
  // The brackets are spans, so the model's ⟦1⟧ means only our span 1.
  ASSERT_EQ(m.spans.size(), 3u);
  EXPECT_EQ(m.spans[0], "⟦");
  EXPECT_EQ(m.spans[2], "⟧");
  const Restored r = Restore(m.text, m.spans);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.text, "look ⟦1⟧ here");
}

TEST(ProtectedSpansTest, RestoreChecksEveryPlaceholderCameBackOnce) {
  const std::vector<std::string> spans = {"@bob", "https://x.io"};
  Restored ok = Restore("嗨 " + P(1) + "，看 " + P(2), spans);
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.text, "嗨 @bob，看 https://x.io");
  // Order may change in translation.
  EXPECT_TRUE(Restore(P(2) + " " + P(1), spans).ok);
  Restored missing = Restore("嗨 " + P(1), spans);
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.text, "嗨 @bob");
  EXPECT_FALSE(Restore(P(1) + P(1) + P(2), spans).ok);
  Restored unknown = Restore(P(1) + P(2) + P(3), spans);
  EXPECT_FALSE(unknown.ok);
  EXPECT_EQ(unknown.text, "@bobhttps://x.io" + P(3));
  EXPECT_FALSE(Restore("⟦ " + P(1) + P(2), spans).ok);
  EXPECT_TRUE(Restore("nothing to restore", {}).ok);
}

TEST(ProtectedSpansTest, MapTermsMustAppearWhenTheirSourceDoes) {
  const std::vector<std::pair<std::string, std::string>> map = {{"stream", "直播"}, {"gift", "礼物"}};
  EXPECT_TRUE(MapTermsHonoured("great stream", "很棒的直播", map));
  EXPECT_FALSE(MapTermsHonoured("great stream", "很棒的视频", map));
  EXPECT_TRUE(MapTermsHonoured("hello", "你好", map));  // Neither term is in the source.
}

TEST(ProtectedSpansTest, IllFormedInputNeitherCrashesNorLosesBytes) {
  const std::string bad = std::string("a\xff@b\xc3") + "\x28 9";
  const Masked m = Protect(bad, {});
  const Restored r = Restore(m.text, m.spans);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.text, bad);
}

}  // namespace
}  // namespace swiftlet::translate
