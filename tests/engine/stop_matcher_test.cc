#include "engine/stop_matcher.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace swiftlet {
namespace {

TEST(StopMatcherTest, NoStopsEmitsEverything) {
  StopMatcher m({});
  StopMatcher::Result r = m.Push("abc");
  EXPECT_EQ(r.emit, "abc");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(m.Push("").emit, "");
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcherTest, HoldsPossibleStartAndStopsAcrossPushes) {
  StopMatcher m({"END"});
  StopMatcher::Result r = m.Push("hello E");
  EXPECT_EQ(r.emit, "hello ");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(m.held_bytes(), 1u);
  r = m.Push("N");
  EXPECT_EQ(r.emit, "");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(m.held_bytes(), 2u);
  r = m.Push("D and more");
  EXPECT_EQ(r.emit, "");
  EXPECT_TRUE(r.stopped);
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcherTest, TextBeforeStopInSamePushIsEmitted) {
  StopMatcher m({"\n\n"});
  EXPECT_EQ(m.Push("a\n").emit, "a");
  StopMatcher::Result r = m.Push("b\n\nc");
  EXPECT_EQ(r.emit, "\nb");
  EXPECT_TRUE(r.stopped);
}

TEST(StopMatcherTest, FalseStartIsReleased) {
  StopMatcher m({"abc"});
  EXPECT_EQ(m.Push("ab").emit, "");
  EXPECT_EQ(m.Push("x").emit, "abx");
  EXPECT_EQ(m.held_bytes(), 0u);
}

TEST(StopMatcherTest, OverlappingPartialMatch) {
  StopMatcher m({"aab"});
  EXPECT_EQ(m.Push("aa").emit, "");
  EXPECT_EQ(m.Push("a").emit, "a");  // "aa" may still start "aab".
  StopMatcher::Result r = m.Push("b");
  EXPECT_EQ(r.emit, "");
  EXPECT_TRUE(r.stopped);
}

TEST(StopMatcherTest, FlushReleasesHeldTextAndStartsOver) {
  StopMatcher m({"ab"});
  EXPECT_EQ(m.Push("xa").emit, "x");
  EXPECT_EQ(m.Flush(), "a");
  EXPECT_EQ(m.held_bytes(), 0u);
  // A new stream: the "a" flushed above cannot complete a stop now.
  StopMatcher::Result r = m.Push("b");
  EXPECT_EQ(r.emit, "b");
  EXPECT_FALSE(r.stopped);
}

TEST(StopMatcherTest, EarliestEndWinsOverEarlierStart) {
  StopMatcher m({"abcd", "bc"});
  StopMatcher::Result r = m.Push("abcd");
  EXPECT_EQ(r.emit, "a");
  EXPECT_TRUE(r.stopped);
}

TEST(StopMatcherTest, SameEndLongestWins) {
  StopMatcher m({"cd", "bcd"});
  StopMatcher::Result r = m.Push("abcde");
  EXPECT_EQ(r.emit, "a");
  EXPECT_TRUE(r.stopped);
}

TEST(StopMatcherTest, FirstCompletedOfSeveral) {
  StopMatcher m({"xyz", "b"});
  EXPECT_EQ(m.Push("ax").emit, "a");
  StopMatcher::Result r = m.Push("yb");
  EXPECT_EQ(r.emit, "xy");
  EXPECT_TRUE(r.stopped);
}

TEST(StopMatcherTest, NothingAfterStop) {
  StopMatcher m({"!"});
  EXPECT_TRUE(m.Push("hi!").stopped);
  StopMatcher::Result r = m.Push("more");
  EXPECT_EQ(r.emit, "");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcherTest, MultiByteStopKeepsCharactersWhole) {
  // "。" is E3 80 82; "、" is E3 80 81: they share two leading bytes.
  StopMatcher m({"。"});
  StopMatcher::Result r = m.Push("你好、世界");
  EXPECT_EQ(r.emit, "你好、世界");
  r = m.Push("。再见");
  EXPECT_EQ(r.emit, "");
  EXPECT_TRUE(r.stopped);
}

TEST(StopMatcherTest, ValidateRejectsBadStops) {
  EXPECT_TRUE(StopMatcher::Validate({}).ok());
  EXPECT_TRUE(StopMatcher::Validate(std::vector<std::string>(16, "x")).ok());
  EXPECT_TRUE(StopMatcher::Validate({std::string(256, 'a')}).ok());
  EXPECT_TRUE(StopMatcher::Validate({"\xf0\x9f\x98\x80"}).ok());  // U+1F600

  absl::Status s = StopMatcher::Validate(std::vector<std::string>(17, "x"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("at most 16"), absl::string_view::npos) << s;

  s = StopMatcher::Validate({"ok", ""});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("stop[1]"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("empty"), absl::string_view::npos) << s;

  s = StopMatcher::Validate({std::string(257, 'a')});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("257"), absl::string_view::npos) << s;

  for (const char* bad : {"\xff", "a\xc3", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                          "\xe0\x80\x80"}) {
    s = StopMatcher::Validate({bad});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << "stop " << testing::PrintToString(bad);
    EXPECT_NE(s.message().find("UTF-8"), absl::string_view::npos) << s;
  }
}

// ---- Randomized comparison with a brute-force reference -------------------

struct Expected {
  bool stopped = false;
  size_t emit_bytes = 0;  // Emitted prefix of the whole text.
  size_t stop_end = 0;    // Byte after the completed stop (when stopped).
};

// Scans end positions from the left; at the first end where some stop ends,
// the longest such stop decides.
Expected Reference(const std::string& text, const std::vector<std::string>& stops) {
  for (size_t end = 1; end <= text.size(); ++end) {
    size_t longest = 0;
    for (const std::string& s : stops) {
      if (s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0) {
        longest = std::max(longest, s.size());
      }
    }
    if (longest > 0) return {true, end - longest, end};
  }
  return {false, text.size(), 0};
}

// The longest suffix of `text` that is a proper prefix of some stop.
size_t ReferenceHeld(const std::string& text, const std::vector<std::string>& stops) {
  size_t best = 0;
  for (const std::string& s : stops) {
    for (size_t len = std::min(s.size() - 1, text.size()); len > best; --len) {
      if (text.compare(text.size() - len, len, s, 0, len) == 0) {
        best = len;
        break;
      }
    }
  }
  return best;
}

TEST(StopMatcherTest, RandomMatchesBruteForce) {
  std::mt19937_64 rng(12345);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::string alphabet = "aab";  // Skewed: repeats make partial matches overlap.
  auto random_string = [&](int len, const std::string& letters) {
    std::string s;
    for (int i = 0; i < len; ++i) s.push_back(letters[uniform(0, static_cast<int>(letters.size()) - 1)]);
    return s;
  };
  int stopped_cases = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const std::string letters = iter % 2 ? alphabet : "abc";
    std::vector<std::string> stops;
    const int n_stops = uniform(0, 4);
    for (int i = 0; i < n_stops; ++i) stops.push_back(random_string(uniform(1, 5), letters));
    const std::string text = random_string(uniform(0, 40), letters);
    const Expected want = Reference(text, stops);

    StopMatcher m(stops);
    std::string emitted;
    size_t pos = 0;
    bool stopped = false;
    while (pos < text.size() || (pos == text.size() && uniform(0, 3) == 0)) {
      const size_t len = std::min<size_t>(text.size() - pos, uniform(0, 6));
      const StopMatcher::Result r = m.Push(std::string_view(text).substr(pos, len));
      pos += len;
      emitted += r.emit;
      // Nothing emitted is ever taken back: all of it belongs to the answer.
      ASSERT_LE(emitted.size(), want.emit_bytes) << "text " << text << " pos " << pos;
      ASSERT_EQ(emitted, text.substr(0, emitted.size()));
      if (r.stopped) {
        stopped = true;
        // It stops in the push that completes the stop string, no later.
        ASSERT_TRUE(want.stopped) << "text " << text;
        ASSERT_GE(pos, want.stop_end);
        ASSERT_LT(pos - len, want.stop_end);
        break;
      }
      ASSERT_FALSE(want.stopped && pos >= want.stop_end) << "missed stop in " << text;
      // Held exactly the longest suffix that could still start a stop.
      ASSERT_EQ(m.held_bytes(), ReferenceHeld(text.substr(0, pos), stops)) << "text " << text;
      ASSERT_EQ(emitted.size() + m.held_bytes(), pos);
      if (pos == text.size()) break;
    }
    if (!stopped) emitted += m.Flush();
    EXPECT_EQ(stopped, want.stopped) << "text " << text;
    ASSERT_EQ(emitted, text.substr(0, want.emit_bytes)) << "text " << text;
    stopped_cases += stopped;
  }
  // The generator exercises both outcomes.
  EXPECT_GT(stopped_cases, 2000);
  EXPECT_LT(stopped_cases, 18000);
}

}  // namespace
}  // namespace swiftlet
