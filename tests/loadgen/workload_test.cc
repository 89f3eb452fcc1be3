// Workloads: each request body is read back through the API's own request
// parser (the server's view) and must ask exactly the planned work.
#include "loadgen/workload.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "api/request_codec.h"
#include "gtest/gtest.h"

namespace swiftlet::loadgen {
namespace {

int64_t Words(const std::string& s) {
  std::istringstream in(s);
  int64_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

std::string TempFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(LengthSpecTest, ParsesFixedAndRanges) {
  EXPECT_EQ(LengthSpec::Parse("40")->min, 40);
  EXPECT_EQ(LengthSpec::Parse("40")->max, 40);
  EXPECT_EQ(LengthSpec::Parse("20-60")->max, 60);
  EXPECT_EQ(LengthSpec::Parse("20-60")->ToString(), "20-60");
  for (const char* bad : {"", "0", "-3", "5-2", "x", "1-", "10000001", "3.5"}) {
    EXPECT_FALSE(LengthSpec::Parse(bad).ok()) << bad;
  }
  std::mt19937_64 rng(1);
  const LengthSpec r{3, 5};
  bool seen[6] = {};
  for (int i = 0; i < 200; ++i) {
    const int64_t v = r.Draw(rng);
    ASSERT_GE(v, 3);
    ASSERT_LE(v, 5);
    seen[v] = true;
  }
  EXPECT_TRUE(seen[3] && seen[4] && seen[5]);
}

TEST(WorkloadTest, SyntheticAsksTheForcedLengthAndStreams) {
  WorkloadOptions o;
  o.model = "m";
  o.prompt_words = {40, 40};
  o.output_tokens = {5, 9};
  auto w = MakeWorkload("synthetic", o);
  ASSERT_TRUE(w.ok());
  for (int64_t i = 0; i < 20; ++i) {
    const PlannedRequest p = (*w)->Make(i);
    EXPECT_EQ(p.target, "/v1/completions");
    auto r = api::ParseCompletionRequest(p.body);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->model, "m");
    ASSERT_EQ(r->prompts.size(), 1u);
    EXPECT_EQ(Words(std::get<std::string>(r->prompts[0])), 40);
    EXPECT_EQ(*r->options.max_tokens, p.output_tokens);
    EXPECT_EQ(*r->options.min_tokens, p.output_tokens);
    EXPECT_GE(p.output_tokens, 5);
    EXPECT_LE(p.output_tokens, 9);
    EXPECT_TRUE(r->options.ignore_eos);
    EXPECT_TRUE(r->options.stream);
    EXPECT_TRUE(r->options.include_usage);
    // Deterministic in the index; different across indices.
    EXPECT_EQ((*w)->Make(i).body, p.body);
    EXPECT_NE((*w)->Make(i + 1).body, p.body);
  }
}

TEST(WorkloadTest, SyntheticSharedPrefixIsTheSameInEveryPrompt) {
  WorkloadOptions o;
  o.prompt_words = {20, 20};
  o.shared_prefix_words = 150;
  auto w = MakeWorkload("synthetic", o);
  ASSERT_TRUE(w.ok());
  std::string shared;
  for (int64_t i = 0; i < 10; ++i) {
    auto r = api::ParseCompletionRequest((*w)->Make(i).body);
    ASSERT_TRUE(r.ok()) << r.status();
    const std::string prompt = std::get<std::string>(r->prompts[0]);
    const size_t nl = prompt.find('\n');
    ASSERT_NE(nl, std::string::npos);
    EXPECT_EQ(Words(prompt.substr(0, nl)), 150);
    EXPECT_EQ(Words(prompt.substr(nl + 1)), 20);
    if (i == 0) shared = prompt.substr(0, nl);
    EXPECT_EQ(prompt.substr(0, nl), shared);
  }
  o.shared_prefix_words = -1;
  EXPECT_FALSE(MakeWorkload("synthetic", o).ok());
  o.shared_prefix_words = 5;
  EXPECT_FALSE(MakeWorkload("live-comments", o).ok());
}

TEST(WorkloadTest, LiveCommentsSendsEachCommentOncePerLanguage) {
  WorkloadOptions o;
  o.prompt_words = {12, 12};
  o.output_tokens = {24, 24};
  o.languages = 3;
  auto w = MakeWorkload("live-comments", o);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->fan_out(), 3);
  std::vector<api::ChatCompletionRequest> r;
  for (int64_t i = 0; i < 6; ++i) {
    const PlannedRequest p = (*w)->Make(i);
    EXPECT_EQ(p.target, "/v1/chat/completions");
    auto parsed = api::ParseChatCompletionRequest(p.body);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ASSERT_EQ(parsed->messages.size(), 2u);
    EXPECT_EQ(*parsed->options.max_tokens, 24);
    EXPECT_TRUE(parsed->options.ignore_eos);
    EXPECT_EQ(Words(parsed->messages[1].content), 12);
    r.push_back(*parsed);
  }
  // Requests 0..2: one comment, three languages; 3..5 the next comment.
  EXPECT_EQ(r[0].messages[1].content, r[2].messages[1].content);
  EXPECT_NE(r[0].messages[1].content, r[3].messages[1].content);
  EXPECT_NE(r[0].messages[0].content, r[1].messages[0].content);
  EXPECT_EQ(r[0].messages[0].content, r[3].messages[0].content);
  // The instruction is a shared prefix: languages differ only at its end.
  const std::string& a = r[0].messages[0].content;
  const std::string& b = r[1].messages[0].content;
  EXPECT_GT(std::mismatch(a.begin(), a.end(), b.begin()).first - a.begin(), 300);
  o.languages = 11;
  EXPECT_FALSE(MakeWorkload("live-comments", o).ok());
}

TEST(WorkloadTest, FileLinesAreRequestBodies) {
  const std::string path = TempFile(
      "workload.jsonl",
      "{\"prompt\": \"one two three\"}\n\n"
      "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 7, \"stream\": false}\r\n");
  WorkloadOptions o;
  o.model = "x";
  o.output_tokens = {4, 4};
  auto w = MakeWorkload("file:" + path, o);
  ASSERT_TRUE(w.ok()) << w.status();
  const PlannedRequest a = (*w)->Make(0), b = (*w)->Make(1), c = (*w)->Make(2);
  EXPECT_EQ(a.target, "/v1/completions");
  EXPECT_EQ(a.output_tokens, 4);
  EXPECT_EQ(b.target, "/v1/chat/completions");
  EXPECT_EQ(b.output_tokens, 7);  // The line's own max_tokens.
  auto chat = api::ParseChatCompletionRequest(b.body);
  ASSERT_TRUE(chat.ok());
  EXPECT_TRUE(chat->options.stream);  // Forced: the bench needs the stream.
  EXPECT_EQ(chat->model, "x");
  EXPECT_EQ(c.body, a.body);  // Cycled.
}

TEST(WorkloadTest, BadFilesAreClearErrors) {
  WorkloadOptions o;
  EXPECT_EQ(MakeWorkload("file:/no/such/file", o).status().code(), absl::StatusCode::kNotFound);
  const std::string bad = TempFile("bad.jsonl", "{\"prompt\": \"ok\"}\n{\"prompt\": 5}\n");
  const auto s = MakeWorkload("file:" + bad, o).status();
  EXPECT_NE(s.message().find("bad.jsonl:2: prompt"), std::string::npos) << s;
  const std::string empty = TempFile("empty.jsonl", "\n\n");
  EXPECT_NE(MakeWorkload("file:" + empty, o).status().message().find("no requests"), std::string::npos);
  const std::string two = TempFile("two.jsonl", "{\"prompt\": [\"a\", \"b\"]}\n");
  EXPECT_FALSE(MakeWorkload("file:" + two, o).ok());
  EXPECT_FALSE(MakeWorkload("nonsense", o).ok());
  EXPECT_FALSE(MakeWorkload("file:", o).ok());
}

}  // namespace
}  // namespace swiftlet::loadgen
