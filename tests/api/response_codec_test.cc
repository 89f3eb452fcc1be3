#include "api/response_codec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <limits>

namespace swiftlet::api {
namespace {

using nlohmann::json;

CompletionResponse Sample(ResponseKind kind) {
  CompletionResponse r;
  r.kind = kind;
  r.id = "cmpl-1";
  r.created = 1700000000;
  r.model = "tiny";
  Choice a;
  a.index = 0;
  a.text = "Hello";
  if (kind != ResponseKind::kCompletion) a.role = "assistant";
  a.logprobs = std::vector<TokenLogprob>{
      {"Hel", -0.5, {{"Hel", -0.5}, {"He", -1.25}}, kind == ResponseKind::kCompletion ? 0 : 0},
      {"lo", -0.125, {{"lo", -0.125}}, kind == ResponseKind::kCompletion ? 3 : 0}};
  a.finish_reason = "stop";
  Choice b;
  b.index = 1;
  b.text = kind == ResponseKind::kChatCompletionChunk ? std::nullopt
                                                       : std::optional<std::string>("");
  if (kind == ResponseKind::kChatCompletion) b.role = "assistant";
  b.finish_reason = "length";
  r.choices = {a, b};
  r.usage = UsageInfo{12, 7, 4};
  return r;
}

TEST(ResponseCodecTest, CompletionShape) {
  json j = json::parse(SerializeCompletionResponse(Sample(ResponseKind::kCompletion)));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"], "cmpl-1");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["choices"][0]["text"], "Hello");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"], json({"Hel", "lo"}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["token_logprobs"], json({-0.5, -0.125}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["top_logprobs"][0]["He"], -1.25);
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"], json({0, 3}));
  EXPECT_TRUE(j["choices"][1]["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["prompt_tokens"], 12);
  EXPECT_EQ(j["usage"]["completion_tokens"], 7);
  EXPECT_EQ(j["usage"]["total_tokens"], 19);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
}

TEST(ResponseCodecTest, ChatShapes) {
  json full = json::parse(SerializeCompletionResponse(Sample(ResponseKind::kChatCompletion)));
  EXPECT_EQ(full["object"], "chat.completion");
  EXPECT_EQ(full["choices"][0]["message"], json({{"role", "assistant"}, {"content", "Hello"}}));
  const json& lp = full["choices"][0]["logprobs"]["content"];
  EXPECT_EQ(lp[0]["token"], "Hel");
  EXPECT_EQ(lp[0]["bytes"], json({72, 101, 108}));
  EXPECT_EQ(lp[0]["top_logprobs"][1], json({{"token", "He"}, {"logprob", -1.25},
                                             {"bytes", {72, 101}}}));

  CompletionResponse chunk = Sample(ResponseKind::kChatCompletionChunk);
  json c = json::parse(SerializeCompletionResponse(chunk));
  EXPECT_EQ(c["object"], "chat.completion.chunk");
  EXPECT_EQ(c["choices"][0]["delta"], json({{"role", "assistant"}, {"content", "Hello"}}));
  EXPECT_EQ(c["choices"][1]["delta"], json::object());  // No role, no content.
  EXPECT_EQ(c["choices"][1]["finish_reason"], "length");

  CompletionResponse usage_only;
  usage_only.kind = ResponseKind::kChatCompletionChunk;
  usage_only.usage = UsageInfo{1, 2, 0};
  json u = json::parse(SerializeCompletionResponse(usage_only));
  EXPECT_EQ(u["choices"], json::array());
  EXPECT_EQ(u["usage"]["total_tokens"], 3);
  CompletionResponse no_usage = Sample(ResponseKind::kChatCompletionChunk);
  no_usage.usage.reset();
  EXPECT_FALSE(json::parse(SerializeCompletionResponse(no_usage)).contains("usage"));
}

// JSON has no -inf or NaN: a token without probability is OpenAI's -9999.0
// in both shapes, never null.
TEST(ResponseCodecTest, LogprobsWithoutProbabilityAreMinus9999) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (ResponseKind kind : {ResponseKind::kCompletion, ResponseKind::kChatCompletion}) {
    CompletionResponse r = Sample(kind);
    r.choices[0].logprobs = std::vector<TokenLogprob>{{"a", -inf, {{"a", -inf}, {"b", nan}, {"c", -12345.0}}, 0}};
    const json j = json::parse(SerializeCompletionResponse(r));
    const json& lp = j["choices"][0]["logprobs"];
    if (kind == ResponseKind::kCompletion) {
      EXPECT_EQ(lp["token_logprobs"], json({-9999.0}));
      EXPECT_EQ(lp["top_logprobs"][0], json({{"a", -9999.0}, {"b", -9999.0}, {"c", -9999.0}}));
    } else {
      EXPECT_EQ(lp["content"][0]["logprob"], -9999.0);
      for (int i = 0; i < 3; ++i) EXPECT_EQ(lp["content"][0]["top_logprobs"][i]["logprob"], -9999.0) << i;
    }
  }
}

TEST(ResponseCodecTest, CompletionsRoundTrip) {
  for (ResponseKind kind : {ResponseKind::kCompletion, ResponseKind::kChatCompletion,
                            ResponseKind::kChatCompletionChunk}) {
    CompletionResponse r = Sample(kind);
    auto back = ParseCompletionResponse(SerializeCompletionResponse(r));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, r) << static_cast<int>(kind);
  }
  EXPECT_FALSE(ParseCompletionResponse(R"({"object": "list"})").ok());
  EXPECT_FALSE(ParseCompletionResponse(R"({"object": "text_completion", "choices": 1})").ok());
}

TEST(ResponseCodecTest, ModelsRoundTrip) {
  std::vector<ModelInfo> models = {{"a", 1, "swiftlet"}, {"b", 2, "me"}};
  json j = json::parse(SerializeModelList(models));
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][1], json({{"id", "b"}, {"object", "model"}, {"created", 2},
                                 {"owned_by", "me"}}));
  auto back = ParseModelList(SerializeModelList(models));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, models);
}

TEST(ResponseCodecTest, EmbeddingsFloatAndBase64) {
  EmbeddingResponse r;
  r.model = "emb";
  r.embeddings = {{1.0f, -2.5f}, {0.1f}};
  r.prompt_tokens = 5;
  json j = json::parse(SerializeEmbeddingResponse(r));
  EXPECT_EQ(j["data"][0]["embedding"], json({1.0, -2.5}));
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["usage"], json({{"prompt_tokens", 5}, {"total_tokens", 5}}));
  auto back = ParseEmbeddingResponse(SerializeEmbeddingResponse(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, r);

  r.encoding = EmbeddingEncoding::kBase64;
  r.embeddings = {{1.0f}};
  j = json::parse(SerializeEmbeddingResponse(r));
  // 1.0f is 0x3f800000: bytes 00 00 80 3f.
  EXPECT_EQ(j["data"][0]["embedding"], "AACAPw==");
  back = ParseEmbeddingResponse(SerializeEmbeddingResponse(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, r);
}

TEST(ResponseCodecTest, TokenizeAndDetokenize) {
  EXPECT_EQ(json::parse(SerializeTokenizeResponse({5, 6}, 2048)),
            json({{"tokens", {5, 6}}, {"count", 2}, {"max_model_len", 2048}}));
  EXPECT_EQ(json::parse(SerializeDetokenizeResponse("hi \"x\"")), json({{"prompt", "hi \"x\""}}));
}

TEST(ResponseCodecTest, InvalidUtf8IsReplacedNotThrown) {
  CompletionResponse r = Sample(ResponseKind::kCompletion);
  r.choices[0].text = std::string("a\xff", 2);
  json j = json::parse(SerializeCompletionResponse(r));
  EXPECT_EQ(j["choices"][0]["text"], "a\xEF\xBF\xBD");
}

}  // namespace
}  // namespace swiftlet::api
