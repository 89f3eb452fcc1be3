#include "server/openai_mapping.h"

#include <gtest/gtest.h>

#include "api/errors.h"
#include "core/clock.h"

namespace swiftlet::server {
namespace {

GenerationDefaults Defaults() {
  GenerationDefaults d;
  d.context = 100;
  return d;
}

absl::StatusOr<RequestOptions> Map(const api::GenerationOptions& g, GenerationEndpoint e, int64_t prompt,
                                   GenerationDefaults d = Defaults(), int32_t top_logprobs = -1) {
  std::mt19937_64 seeds(42);
  return ToEngineOptions(g, e, prompt, top_logprobs, d, seeds);
}

TEST(OpenAiMappingTest, OpenAiDefaults) {
  auto o = Map({}, GenerationEndpoint::kCompletions, 10);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->max_tokens, 16);  // OpenAI's documented default for completions.
  EXPECT_EQ(o->sampling.temperature, 1.0f);
  EXPECT_EQ(o->sampling.top_p, 1.0f);
  EXPECT_EQ(o->sampling.top_k, 0);
  EXPECT_EQ(o->n, 1);
  EXPECT_EQ(o->top_logprobs, -1);
  EXPECT_EQ(o->latency_class, LatencyClass::kInteractive);
  EXPECT_EQ(o->targets.ttft_ns, 0);
  // Chat runs to the end of the context by default.
  auto chat = Map({}, GenerationEndpoint::kChat, 10);
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->max_tokens, 90);
  // A server cap applies to defaults too.
  GenerationDefaults capped = Defaults();
  capped.max_tokens_cap = 32;
  EXPECT_EQ(Map({}, GenerationEndpoint::kChat, 10, capped)->max_tokens, 32);
}

TEST(OpenAiMappingTest, ExplicitFieldsPassThrough) {
  api::GenerationOptions g;
  g.max_tokens = 20;
  g.temperature = 0.0;
  g.top_p = 0.5;
  g.top_k = -1;
  g.min_p = 0.1;
  g.repetition_penalty = 1.3;
  g.presence_penalty = 0.5;
  g.seed = 1234;
  g.n = 3;
  g.stop = {"\n\n"};
  g.ignore_eos = true;
  g.min_tokens = 5;
  g.priority = api::Priority::kBatch;
  g.ttft_target_ms = 250;
  auto o = Map(g, GenerationEndpoint::kCompletions, 10, Defaults(), 2);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->max_tokens, 20);
  EXPECT_EQ(o->sampling.temperature, 0.0f);
  EXPECT_EQ(o->sampling.top_p, 0.5f);
  EXPECT_EQ(o->sampling.top_k, 0) << "top_k -1 means off";
  EXPECT_FLOAT_EQ(o->sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(o->sampling.repetition_penalty, 1.3f);
  EXPECT_FLOAT_EQ(o->sampling.presence_penalty, 0.5f);
  EXPECT_EQ(o->sampling.penalty_last_n, -1) << "OpenAI penalties count the whole output";
  EXPECT_EQ(o->sampling.seed, 1234u);
  EXPECT_EQ(o->n, 3);
  EXPECT_EQ(o->stop, std::vector<std::string>{"\n\n"});
  EXPECT_TRUE(o->ignore_eos);
  EXPECT_EQ(o->min_tokens, 5);
  EXPECT_EQ(o->top_logprobs, 2);
  EXPECT_EQ(o->latency_class, LatencyClass::kBatch);
  EXPECT_EQ(o->targets.ttft_ns, 250 * kNsPerMs);
}

TEST(OpenAiMappingTest, UnseededRequestsDrawDifferentSeeds) {
  std::mt19937_64 seeds(7);
  auto a = ToEngineOptions({}, GenerationEndpoint::kChat, 1, -1, Defaults(), seeds);
  auto b = ToEngineOptions({}, GenerationEndpoint::kChat, 1, -1, Defaults(), seeds);
  EXPECT_NE(a->sampling.seed, b->sampling.seed);
}

TEST(OpenAiMappingTest, ContextOverflowNamesTheField) {
  api::GenerationOptions g;
  g.max_tokens = 95;
  auto o = Map(g, GenerationEndpoint::kCompletions, 10);
  ASSERT_FALSE(o.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(o.status()));
  EXPECT_EQ(api::ErrorParam(o.status()), "max_tokens");
  auto full = Map({}, GenerationEndpoint::kCompletions, 100);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(api::ErrorParam(full.status()), "prompt");
  GenerationDefaults capped = Defaults();
  capped.max_tokens_cap = 8;
  g.max_tokens = 9;
  EXPECT_EQ(api::ErrorParam(Map(g, GenerationEndpoint::kChat, 1, capped).status()), "max_tokens");
  api::GenerationOptions m;
  m.max_tokens = 4;
  m.min_tokens = 5;
  EXPECT_EQ(api::ErrorParam(Map(m, GenerationEndpoint::kChat, 1).status()), "min_tokens");
}

TEST(OpenAiMappingTest, ChatRoles) {
  std::vector<api::ChatMessage> in = {{api::Role::kDeveloper, "be brief", ""},
                                      {api::Role::kUser, "hi", ""},
                                      {api::Role::kAssistant, "hello", ""}};
  auto out = ToTemplateMessages(in);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ((*out)[0].role, "system");
  EXPECT_EQ((*out)[1].role, "user");
  EXPECT_EQ((*out)[2].content, "hello");
  in.push_back({api::Role::kTool, "{}", ""});
  auto bad = ToTemplateMessages(in);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(api::ErrorParam(bad.status()), "messages[3].role");
}

TEST(OpenAiMappingTest, RefusalsMapToOpenAiStatuses) {
  auto http = [](RefusalReason r, int64_t retry, std::string message = "m") {
    SubmitResult s;
    s.refused = r;
    s.retry_after_ms = retry;
    s.message = std::move(message);
    return api::ApiErrorFromStatus(RefusalStatus(s)).http_status;
  };
  EXPECT_EQ(http(RefusalReason::kQueueFull, 100), 429);
  EXPECT_EQ(http(RefusalReason::kQueuedTokens, 100), 429);
  EXPECT_EQ(http(RefusalReason::kTtftTarget, 100), 429);
  EXPECT_EQ(http(RefusalReason::kKvMemory, 100), 429);
  EXPECT_EQ(http(RefusalReason::kKvMemory, 0), 400) << "never fits: retrying cannot help";
  EXPECT_EQ(http(RefusalReason::kNotReady, 1000), 503);
  EXPECT_EQ(http(RefusalReason::kInvalid, 0), 400);
  // A load refusal's code names the limit that refused it (what a load
  // generator counts refusals by); others keep OpenAI's code for the status.
  auto code = [](RefusalReason r, int64_t retry) {
    SubmitResult s;
    s.refused = r;
    s.retry_after_ms = retry;
    s.message = "m";
    return api::ApiErrorFromStatus(RefusalStatus(s)).code;
  };
  EXPECT_EQ(code(RefusalReason::kQueueFull, 100), "queue_full");
  EXPECT_EQ(code(RefusalReason::kQueuedTokens, 100), "queued_tokens");
  EXPECT_EQ(code(RefusalReason::kTtftTarget, 100), "ttft_target");
  EXPECT_EQ(code(RefusalReason::kKvMemory, 100), "kv_memory");
  EXPECT_EQ(code(RefusalReason::kKvMemory, 0), "");
  EXPECT_EQ(code(RefusalReason::kNotReady, 1000), "service_unavailable");
  SubmitResult invalid;
  invalid.refused = RefusalReason::kInvalid;
  invalid.message = "stop: at most 4 strings";
  EXPECT_EQ(api::ErrorParam(RefusalStatus(invalid)), "stop");
  invalid.message = "the prompt: is odd";
  EXPECT_EQ(api::ErrorParam(RefusalStatus(invalid)), "");
}

TEST(OpenAiMappingTest, RetryAfterRoundsUpToWholeSeconds) {
  EXPECT_EQ(RetryAfterHeaders(1).seconds, "1");
  EXPECT_EQ(RetryAfterHeaders(1).milliseconds, "1");
  EXPECT_EQ(RetryAfterHeaders(1000).seconds, "1");
  EXPECT_EQ(RetryAfterHeaders(1001).seconds, "2");
  EXPECT_EQ(RetryAfterHeaders(0).milliseconds, "1");
  EXPECT_EQ(RetryAfterHeaders(12345).seconds, "13");
}

TEST(OpenAiMappingTest, FinishReasons) {
  EXPECT_STREQ(OpenAiFinishReason(FinishReason::kStop), "stop");
  EXPECT_STREQ(OpenAiFinishReason(FinishReason::kLength), "length");
}

}  // namespace
}  // namespace swiftlet::server
