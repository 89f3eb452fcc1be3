#include "api/request_codec.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/errors.h"

namespace swiftlet::api {
namespace {

using ::testing::HasSubstr;

TEST(CompletionRequestTest, ParsesEveryField) {
  auto r = ParseCompletionRequest(R"({
    "model": "m", "prompt": "Hello", "max_tokens": 7, "temperature": 0.5, "top_p": 0.9,
    "n": 2, "stop": ["a", "bc"], "seed": -3, "presence_penalty": 0.25,
    "frequency_penalty": -1, "logprobs": 3, "stream": true,
    "stream_options": {"include_usage": true}, "user": "u1", "top_k": 40, "min_p": 0.05,
    "repetition_penalty": 1.1, "ignore_eos": true, "min_tokens": 2, "priority": "batch",
    "ttft_target_ms": 250})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model, "m");
  ASSERT_EQ(r->prompts.size(), 1u);
  EXPECT_EQ(std::get<std::string>(r->prompts[0]), "Hello");
  const GenerationOptions& o = r->options;
  EXPECT_EQ(o.max_tokens, 7);
  EXPECT_EQ(o.temperature, 0.5);
  EXPECT_EQ(o.top_p, 0.9);
  EXPECT_EQ(o.n, 2);
  EXPECT_EQ(o.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(o.seed, -3);
  EXPECT_EQ(o.presence_penalty, 0.25);
  EXPECT_EQ(o.frequency_penalty, -1.0);
  EXPECT_EQ(r->logprobs, 3);
  EXPECT_TRUE(o.stream);
  EXPECT_TRUE(o.include_usage);
  EXPECT_EQ(o.user, "u1");
  EXPECT_EQ(o.top_k, 40);
  EXPECT_EQ(o.min_p, 0.05);
  EXPECT_EQ(o.repetition_penalty, 1.1);
  EXPECT_TRUE(o.ignore_eos);
  EXPECT_EQ(o.min_tokens, 2);
  EXPECT_EQ(o.priority, Priority::kBatch);
  EXPECT_EQ(o.ttft_target_ms, 250);
}

TEST(CompletionRequestTest, AbsentAndNullFieldsStayUnset) {
  auto a = ParseCompletionRequest(R"({"prompt": "x"})");
  auto b = ParseCompletionRequest(
      R"({"prompt": "x", "max_tokens": null, "temperature": null, "stop": null,
          "stream_options": null, "priority": null, "logprobs": null})");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*a, *b);
  EXPECT_FALSE(a->options.max_tokens.has_value());
  EXPECT_FALSE(a->options.temperature.has_value());
  EXPECT_FALSE(a->options.priority.has_value());
  EXPECT_EQ(a->options.n, 1);
  EXPECT_TRUE(a->model.empty());
}

TEST(CompletionRequestTest, PromptForms) {
  auto texts = ParseCompletionRequest(R"({"prompt": ["a", "b"]})");
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(texts->prompts, (std::vector<PromptInput>{std::string("a"), std::string("b")}));
  auto ids = ParseCompletionRequest(R"({"prompt": [1, 2, 3]})");
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->prompts, (std::vector<PromptInput>{std::vector<int32_t>{1, 2, 3}}));
  auto batch = ParseCompletionRequest(R"({"prompt": [[1], [2, 2147483647]]})");
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->prompts, (std::vector<PromptInput>{std::vector<int32_t>{1},
                                                      std::vector<int32_t>{2, 2147483647}}));
}

TEST(CompletionRequestTest, UnknownFieldsAreIgnored) {
  auto plain = ParseCompletionRequest(R"({"prompt": "x", "n": 3})");
  auto extra = ParseCompletionRequest(
      R"({"prompt": "x", "n": 3, "logit_bias": {"50256": -100}, "echo": false,
          "suffix": null, "best_of": 1, "x_future": [1, {"deep": [true]}]})");
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(extra.ok()) << extra.status();
  EXPECT_EQ(*plain, *extra);
}

TEST(CompletionRequestTest, RoundTrips) {
  CompletionRequest r;
  r.model = "tiny";
  r.prompts = {std::string("one"), std::string("two \"quoted\" \xE2\x82\xAC")};
  r.options.max_tokens = 16;
  r.options.temperature = 0.7;
  r.options.top_p = 0.95;
  r.options.n = 3;
  r.options.stop = {"\n\n"};
  r.options.seed = 42;
  r.options.presence_penalty = 0.5;
  r.options.frequency_penalty = 0.125;
  r.options.stream = true;
  r.options.include_usage = true;
  r.options.user = "someone";
  r.options.top_k = -1;
  r.options.min_p = 0.1;
  r.options.repetition_penalty = 1.3;
  r.options.ignore_eos = true;
  r.options.min_tokens = 4;
  r.options.priority = Priority::kInteractive;
  r.options.ttft_target_ms = 300;
  r.logprobs = 5;
  auto back = ParseCompletionRequest(SerializeCompletionRequest(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, r);

  CompletionRequest ids;
  ids.prompts = {std::vector<int32_t>{5, 6}, std::vector<int32_t>{7}};
  ids.options.stop = {"a", "b", "c", "d"};
  auto ids_back = ParseCompletionRequest(SerializeCompletionRequest(ids));
  ASSERT_TRUE(ids_back.ok()) << ids_back.status();
  EXPECT_EQ(*ids_back, ids);
}

TEST(ChatCompletionRequestTest, ParsesMessagesAndContentParts) {
  auto r = ParseChatCompletionRequest(R"({"model": "m", "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo"}],
       "name": "ann"},
      {"role": "assistant", "content": null, "tool_calls": []},
      {"role": "developer", "content": ""}],
    "max_tokens": 9, "max_completion_tokens": 5, "logprobs": true, "top_logprobs": 2})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->messages.size(), 4u);
  EXPECT_EQ(r->messages[0].role, Role::kSystem);
  EXPECT_EQ(r->messages[0].content, "Be brief.");
  EXPECT_EQ(r->messages[1].role, Role::kUser);
  EXPECT_EQ(r->messages[1].content, "Hello");
  EXPECT_EQ(r->messages[1].name, "ann");
  EXPECT_EQ(r->messages[2].role, Role::kAssistant);
  EXPECT_EQ(r->messages[2].content, "");
  EXPECT_EQ(r->messages[3].role, Role::kDeveloper);
  EXPECT_EQ(r->options.max_tokens, 5);  // max_completion_tokens wins.
  EXPECT_TRUE(r->logprobs);
  EXPECT_EQ(r->top_logprobs, 2);
}

TEST(ChatCompletionRequestTest, RoundTrips) {
  ChatCompletionRequest r;
  r.model = "m";
  r.messages = {{Role::kSystem, "sys", ""}, {Role::kUser, "hi\nthere", "bob"},
                {Role::kAssistant, "ok", ""}, {Role::kTool, "{}", ""}};
  r.options.max_tokens = 32;
  r.options.stop = {"</s>", "User:"};
  r.options.priority = Priority::kBatch;
  r.logprobs = true;
  r.top_logprobs = 20;
  auto back = ParseChatCompletionRequest(SerializeChatCompletionRequest(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, r);
}

TEST(OtherRequestsTest, RoundTrip) {
  EmbeddingRequest e;
  e.model = "emb";
  e.inputs = {std::string("a"), std::string("b")};
  e.encoding = EmbeddingEncoding::kBase64;
  e.user = "u";
  auto e_back = ParseEmbeddingRequest(SerializeEmbeddingRequest(e));
  ASSERT_TRUE(e_back.ok()) << e_back.status();
  EXPECT_EQ(*e_back, e);

  TokenizeRequest t;
  t.prompt = "hello";
  t.add_special_tokens = false;
  auto t_back = ParseTokenizeRequest(SerializeTokenizeRequest(t));
  ASSERT_TRUE(t_back.ok()) << t_back.status();
  EXPECT_EQ(*t_back, t);

  TokenizeRequest tm;
  tm.messages = {{Role::kUser, "hey", ""}};
  tm.add_generation_prompt = false;
  auto tm_back = ParseTokenizeRequest(SerializeTokenizeRequest(tm));
  ASSERT_TRUE(tm_back.ok()) << tm_back.status();
  EXPECT_EQ(*tm_back, tm);

  DetokenizeRequest d;
  d.tokens = {0, 1, 2147483647};
  auto d_back = ParseDetokenizeRequest(SerializeDetokenizeRequest(d));
  ASSERT_TRUE(d_back.ok()) << d_back.status();
  EXPECT_EQ(*d_back, d);
}

TEST(OtherRequestsTest, EmbeddingDefaultsToFloat) {
  auto e = ParseEmbeddingRequest(R"({"input": [[1, 2], [3]]})");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->encoding, EmbeddingEncoding::kFloat);
  EXPECT_EQ(e->inputs.size(), 2u);
}

// One bad body: which parser, the body, the param the error must name and a
// piece of the message.
struct BadCase {
  const char* endpoint;  // "completions", "chat", "embeddings", "tokenize", "detokenize"
  std::string body;
  std::string param;
  std::string message;
};

absl::Status ParseAs(const std::string& endpoint, const std::string& body,
                     const ParseLimits& limits) {
  if (endpoint == "completions") return ParseCompletionRequest(body, limits).status();
  if (endpoint == "chat") return ParseChatCompletionRequest(body, limits).status();
  if (endpoint == "embeddings") return ParseEmbeddingRequest(body, limits).status();
  if (endpoint == "tokenize") return ParseTokenizeRequest(body, limits).status();
  return ParseDetokenizeRequest(body, limits).status();
}

std::string Completion(const std::string& fields) {
  return "{\"prompt\": \"p\", " + fields + "}";
}
std::string Chat(const std::string& fields) {
  return "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], " + fields + "}";
}

TEST(RequestErrorsTest, EveryErrorNamesItsField) {
  const std::string long_stop(257, 'x');
  std::string many_prompts = "[";
  for (int i = 0; i < 65; ++i) many_prompts += std::string(i ? "," : "") + "\"p\"";
  many_prompts += "]";
  const std::vector<BadCase> cases = {
      {"completions", "{", "body", "invalid JSON"},
      {"completions", "[1]", "body", "expected a JSON object, got array"},
      {"completions", R"({"model": 5, "prompt": "p"})", "model", "expected string, got integer"},
      {"completions", R"({})", "prompt", "required"},
      {"completions", R"({"prompt": 5})", "prompt", "expected string or array"},
      {"completions", R"({"prompt": []})", "prompt", "must not be empty"},
      {"completions", R"({"prompt": ["a", 1]})", "prompt[1]", "expected string, got integer"},
      {"completions", R"({"prompt": [1, "a"]})", "prompt[1]", "expected integer token id"},
      {"completions", R"({"prompt": [[1], 2]})", "prompt[1]", "expected array of token ids"},
      {"completions", R"({"prompt": [1.5]})", "prompt[0]", "expected string, token id or"},
      {"completions", R"({"prompt": [-1]})", "prompt[0]", "token id out of range"},
      {"completions", R"({"prompt": [2147483648]})", "prompt[0]", "token id out of range"},
      {"completions", R"({"prompt": [[]]})", "prompt[0]", "must not be empty"},
      {"completions", "{\"prompt\": " + many_prompts + "}", "prompt", "more than 64 prompts"},
      {"completions", Completion(R"("max_tokens": 0)"), "max_tokens", "must be in [1, 1048576]"},
      {"completions", Completion(R"("max_tokens": 1048577)"), "max_tokens", "got 1048577"},
      {"completions", Completion(R"("max_tokens": "5")"), "max_tokens", "expected integer"},
      {"completions", Completion(R"("max_tokens": 1.5)"), "max_tokens", "got number"},
      {"completions", Completion(R"("max_tokens": 18446744073709551615)"), "max_tokens",
       "must be in"},
      {"completions", Completion(R"("temperature": -0.1)"), "temperature", "[0, 2]"},
      {"completions", Completion(R"("temperature": 2.5)"), "temperature", "got 2.5"},
      {"completions", Completion(R"("temperature": "hot")"), "temperature", "expected number"},
      {"completions", Completion(R"("top_p": 0)"), "top_p", "(0, 1]"},
      {"completions", Completion(R"("top_p": 1.01)"), "top_p", "(0, 1]"},
      {"completions", Completion(R"("n": 0)"), "n", "[1, 16]"},
      {"completions", Completion(R"("n": 17)"), "n", "[1, 16]"},
      {"completions", Completion(R"("n": true)"), "n", "expected integer, got boolean"},
      {"completions", Completion(R"("stop": ["a","b","c","d","e"])"), "stop",
       "at most 4 stop strings"},
      {"completions", Completion("\"stop\": \"" + long_stop + "\""), "stop", "256 bytes"},
      {"completions", Completion("\"stop\": [\"a\", \"" + long_stop + "\"]"), "stop[1]",
       "256 bytes"},
      {"completions", Completion(R"("stop": [1])"), "stop[0]", "expected string"},
      {"completions", Completion(R"("stop": "")"), "stop", "must not be empty"},
      {"completions", Completion(R"("stop": {})"), "stop", "expected string or array"},
      {"completions", Completion(R"("seed": "x")"), "seed", "expected integer"},
      {"completions", Completion(R"("presence_penalty": 3)"), "presence_penalty", "[-2, 2]"},
      {"completions", Completion(R"("frequency_penalty": -2.5)"), "frequency_penalty",
       "[-2, 2]"},
      {"completions", Completion(R"("stream": "yes")"), "stream", "expected boolean"},
      {"completions", Completion(R"("stream_options": 1)"), "stream_options",
       "expected object"},
      {"completions", Completion(R"("stream_options": {"include_usage": 1})"),
       "stream_options.include_usage", "expected boolean"},
      {"completions", Completion(R"("user": 1)"), "user", "expected string"},
      {"completions", Completion(R"("top_k": -2)"), "top_k", "must be in [-1,"},
      {"completions", Completion(R"("top_k": 1.5)"), "top_k", "expected integer"},
      {"completions", Completion(R"("min_p": 1.5)"), "min_p", "[0, 1]"},
      {"completions", Completion(R"("repetition_penalty": 0)"), "repetition_penalty",
       "(0, 10]"},
      {"completions", Completion(R"("ignore_eos": 1)"), "ignore_eos", "expected boolean"},
      {"completions", Completion(R"("min_tokens": -1)"), "min_tokens", "must be in [0,"},
      {"completions", Completion(R"("min_tokens": 10, "max_tokens": 5)"), "min_tokens",
       "must be <= max_tokens (5)"},
      {"completions", Completion(R"("priority": "urgent")"), "priority",
       "expected \"interactive\" or \"batch\", got \"urgent\""},
      {"completions", Completion(R"("priority": 1)"), "priority", "expected string"},
      {"completions", Completion(R"("ttft_target_ms": 0)"), "ttft_target_ms", "must be in [1, 86400000], got 0"},
      {"completions", Completion(R"("ttft_target_ms": 10000000000000)"), "ttft_target_ms", "86400000"},
      {"completions", Completion(R"("logprobs": 21)"), "logprobs", "[0, 20]"},
      {"completions", Completion(R"("logprobs": true)"), "logprobs", "expected integer"},
      {"chat", R"({})", "messages", "required"},
      {"chat", R"({"messages": {}})", "messages", "expected array, got object"},
      {"chat", R"({"messages": []})", "messages", "must not be empty"},
      {"chat", R"({"messages": [1]})", "messages[0]", "expected object"},
      {"chat", R"({"messages": [{"content": "x"}]})", "messages[0].role", "required"},
      {"chat", R"({"messages": [{"role": "robot"}]})", "messages[0].role",
       "expected one of"},
      {"chat", R"({"messages": [{"role": 1}]})", "messages[0].role", "expected string"},
      {"chat",
       R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
                        {"role": "user", "content": 5}]})",
       "messages[2].content", "expected string or array, got integer"},
      {"chat", R"({"messages": [{"role": "user", "content": [1]}]})",
       "messages[0].content[0]", "expected object"},
      {"chat", R"({"messages": [{"role": "user", "content": [{"text": "a"}]}]})",
       "messages[0].content[0].type", "required"},
      {"chat",
       R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "messages[0].content[0].type", "unsupported content part type \"image_url\""},
      {"chat", R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})",
       "messages[0].content[0].text", "required"},
      {"chat", R"({"messages": [{"role": "user", "content": [{"type": "text", "text": 2}]}]})",
       "messages[0].content[0].text", "expected string"},
      {"chat", R"({"messages": [{"role": "user", "content": "a", "name": 3}]})",
       "messages[0].name", "expected string"},
      {"chat", Chat(R"("max_completion_tokens": 0)"), "max_completion_tokens", "must be in"},
      {"chat", Chat(R"("min_tokens": 8, "max_completion_tokens": 4)"), "min_tokens",
       "max_completion_tokens (4)"},
      {"chat", Chat(R"("logprobs": 1)"), "logprobs", "expected boolean"},
      {"chat", Chat(R"("logprobs": true, "top_logprobs": 21)"), "top_logprobs", "[0, 20]"},
      {"chat", Chat(R"("top_logprobs": 2)"), "top_logprobs", "requires \"logprobs\": true"},
      {"chat", Chat(R"("temperature": [])"), "temperature", "expected number, got array"},
      {"embeddings", R"({})", "input", "required"},
      {"embeddings", R"({"input": 1})", "input", "expected string or array"},
      {"embeddings", R"({"input": ""})", "input", "must not be empty"},
      {"embeddings", R"({"input": "a", "encoding_format": "hex"})", "encoding_format",
       "expected \"float\" or \"base64\""},
      {"tokenize", R"({})", "prompt", "required"},
      {"tokenize", R"({"prompt": "a", "messages": []})", "prompt", "not both"},
      {"tokenize", R"({"messages": [{"role": "x"}]})", "messages[0].role", "expected one of"},
      {"tokenize", R"({"prompt": "a", "add_special_tokens": "no"})", "add_special_tokens",
       "expected boolean"},
      {"detokenize", R"({})", "tokens", "required"},
      {"detokenize", R"({"tokens": "a"})", "tokens", "expected array of token ids"},
      {"detokenize", R"({"tokens": [1.5]})", "tokens[0]", "expected integer token id"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(std::string(c.endpoint) + " " + c.body.substr(0, 200));
    absl::Status s = ParseAs(c.endpoint, c.body, ParseLimits{});
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ErrorParam(s), c.param);
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.param + ": "));
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
    EXPECT_EQ(ApiErrorFromStatus(s).http_status, 400);
  }
}

TEST(RequestLimitsTest, ConfigurableCaps) {
  ParseLimits limits;
  limits.max_n = 4;
  limits.max_tokens_limit = 100;
  EXPECT_TRUE(ParseCompletionRequest(Completion(R"("n": 4, "max_tokens": 100)"), limits).ok());
  absl::Status n = ParseCompletionRequest(Completion(R"("n": 5)"), limits).status();
  EXPECT_EQ(ErrorParam(n), "n");
  EXPECT_THAT(std::string(n.message()), HasSubstr("[1, 4]"));
  absl::Status mt = ParseCompletionRequest(Completion(R"("max_tokens": 101)"), limits).status();
  EXPECT_EQ(ErrorParam(mt), "max_tokens");
  EXPECT_THAT(std::string(mt.message()), HasSubstr("[1, 100]"));
}

std::string Nested(int levels) {
  return std::string(static_cast<size_t>(levels), '[') + std::string(static_cast<size_t>(levels), ']');
}

TEST(RequestLimitsTest, NestingDepthIsBounded) {
  // The top-level object is one level: 31 more arrays make 32, the limit.
  EXPECT_TRUE(ParseCompletionRequest(Completion("\"x\": " + Nested(31))).ok());
  absl::Status s = ParseCompletionRequest(Completion("\"x\": " + Nested(32))).status();
  EXPECT_EQ(ErrorParam(s), "body");
  EXPECT_THAT(std::string(s.message()), HasSubstr("nesting deeper than 32"));
  // A bomb far past the limit fails the same way (and quickly).
  absl::Status bomb = ParseCompletionRequest("{\"x\": " + Nested(1000000) + "}").status();
  EXPECT_THAT(std::string(bomb.message()), HasSubstr("nesting deeper than 32"));
  ParseLimits shallow;
  shallow.max_depth = 2;
  EXPECT_TRUE(ParseChatCompletionRequest(R"({"messages": [{"role": "user"}]})", ParseLimits{}).ok());
  EXPECT_FALSE(ParseChatCompletionRequest(R"({"messages": [{"role": "user"}]})", shallow).ok());
}

TEST(RequestLimitsTest, HugeArraysAreRejected) {
  ParseLimits limits;
  limits.max_array_elements = 1000;
  auto ids = [](int count) {
    std::string s = "[";
    for (int i = 0; i < count; ++i) s += i ? ",1" : "1";
    return s + "]";
  };
  EXPECT_TRUE(ParseCompletionRequest("{\"prompt\": " + ids(1000) + "}", limits).ok());
  absl::Status s = ParseCompletionRequest("{\"prompt\": " + ids(1001) + "}", limits).status();
  EXPECT_EQ(ErrorParam(s), "body");
  EXPECT_THAT(std::string(s.message()), HasSubstr("more than 1000 elements"));
  // Unknown fields count too: their size is bounded even though ignored.
  absl::Status unknown =
      ParseCompletionRequest("{\"prompt\": \"p\", \"junk\": " + ids(1001) + "}", limits).status();
  EXPECT_THAT(std::string(unknown.message()), HasSubstr("more than 1000 elements"));
  // So do objects' members.
  std::string members = "{\"prompt\": \"p\", \"junk\": {";
  for (int i = 0; i < 1001; ++i) members += (i ? ",\"k" : "\"k") + std::to_string(i) + "\": 0";
  members += "}}";
  EXPECT_FALSE(ParseCompletionRequest(members, limits).ok());
  // The default bound holds for a prompt of token ids past 131072.
  absl::Status big = ParseCompletionRequest("{\"prompt\": " + ids(131073) + "}").status();
  EXPECT_THAT(std::string(big.message()), HasSubstr("more than 131072 elements"));
}

TEST(RequestLimitsTest, BodySizeIsBoundedWith413) {
  ParseLimits limits;
  limits.max_body_bytes = 64;
  std::string body = Completion("\"user\": \"" + std::string(100, 'u') + "\"");
  absl::Status s = ParseCompletionRequest(body, limits).status();
  EXPECT_EQ(ErrorParam(s), "body");
  EXPECT_EQ(ApiErrorFromStatus(s).http_status, 413);
}

}  // namespace
}  // namespace swiftlet::api
