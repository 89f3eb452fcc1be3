// text/utf8.h against Unicode's table 3-7 (well-formed byte sequences),
// written out here, and the detokenizer's streaming sanitizer held to it.
#include "text/utf8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <random>
#include <string>

#include "text/detokenizer.h"

namespace swiftlet {
namespace {

TEST(Utf8Test, WellFormedSequencesDecode) {
  struct Case {
    std::string bytes;
    char32_t cp;
  };
  for (const Case& c : {Case{"A", 0x41}, Case{"\x7f", 0x7f}, Case{"\xc2\x80", 0x80},
                        Case{"\xdf\xbf", 0x7ff}, Case{"\xe0\xa0\x80", 0x800},
                        Case{"\xe2\x82\xac", 0x20ac}, Case{"\xed\x9f\xbf", 0xd7ff},
                        Case{"\xee\x80\x80", 0xe000}, Case{"\xef\xbf\xbf", 0xffff},
                        Case{"\xf0\x90\x80\x80", 0x10000}, Case{"\xf4\x8f\xbf\xbf", 0x10ffff}}) {
    char32_t cp = 0;
    EXPECT_EQ(NextUtf8(c.bytes + "tail", &cp), c.bytes.size()) << c.bytes;
    EXPECT_EQ(cp, c.cp) << c.bytes;
    EXPECT_TRUE(IsValidUtf8(c.bytes));
  }
}

TEST(Utf8Test, IllFormedSequencesAreRefused) {
  for (const std::string& bad : {
           std::string("\x80"), std::string("\xbf"),           // lone continuation bytes
           std::string("\xc0\x80"), std::string("\xc1\xbf"),   // overlong two-byte forms
           std::string("\xe0\x9f\xbf"),                        // overlong three-byte form
           std::string("\xed\xa0\x80"), std::string("\xed\xbf\xbf"),  // surrogates
           std::string("\xf0\x8f\xbf\xbf"),                    // overlong four-byte form
           std::string("\xf4\x90\x80\x80"),                    // past U+10FFFF
           std::string("\xf5\x80\x80\x80"), std::string("\xff"),
           std::string("\xe2\x82"), std::string("\xc2"),       // truncated
           std::string("\xe2\x28\xa1"),                        // bad continuation
       }) {
    EXPECT_EQ(NextUtf8(bad), 0u);
    EXPECT_FALSE(IsValidUtf8(bad));
    EXPECT_FALSE(IsValidUtf8("ok " + bad + " ok"));
  }
  EXPECT_EQ(NextUtf8(""), 0u);
  EXPECT_TRUE(IsValidUtf8(""));
}

TEST(Utf8Test, CountsCharactersNotBytes) {
  EXPECT_EQ(CountUtf8Chars(""), 0);
  EXPECT_EQ(CountUtf8Chars("abc"), 3);
  EXPECT_EQ(CountUtf8Chars("\xe4\xbd\xa0\xe5\xa5\xbd!"), 3);  // 你好!
  EXPECT_EQ(CountUtf8Chars("\xf0\x9f\x98\x80"), 1);           // one emoji
  EXPECT_EQ(CountUtf8Chars("a\xff" "b"), 3);                  // an ill-formed byte counts one
}

// Whatever bytes arrive, in whatever chunks, the sanitizer hands out
// well-formed UTF-8, and well-formed input unchanged.
TEST(Utf8Test, SanitizerOutputIsWellFormed) {
  std::mt19937_64 rng(5);
  const std::string pieces[] = {"a", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xc3\xa9", "\x80",
                                "\xe2", "\xed\xa0\x80", "\xff", "\xf4\x90", " "};
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) bytes += pieces[rng() % std::size(pieces)];
    Utf8Sanitizer s;
    std::string out;
    for (size_t i = 0; i < bytes.size();) {
      const size_t len = std::min<size_t>(bytes.size() - i, 1 + rng() % 3);
      s.Append(std::string_view(bytes).substr(i, len), out);
      i += len;
    }
    s.Finish(out);
    EXPECT_TRUE(IsValidUtf8(out)) << trial;
    if (IsValidUtf8(bytes)) {
      EXPECT_EQ(out, bytes) << trial;
    }
  }
}

}  // namespace
}  // namespace swiftlet
