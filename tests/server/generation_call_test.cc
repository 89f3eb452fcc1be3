// GenerationCall turns scripted engine events into OpenAI responses; the
// output is read back with nlohmann-json and checked against the shapes
// OpenAI documents (not against our own serializer's reader).
#include "server/generation_call.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "recording_queue.h"
#include "recording_writer.h"

namespace swiftlet::server {
namespace {

using Json = nlohmann::json;

class GenerationCallTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto file = GgufFile::Open(std::string(SWIFTLET_SHARED_DIR) + "/testdata/vocab/ggml-vocab-llama-spm.gguf");
    ASSERT_TRUE(file.ok()) << file.status();
    auto t = Tokenizer::FromGguf(**file);
    ASSERT_TRUE(t.ok()) << t.status();
    tokenizer_ = t->release();
  }

  std::shared_ptr<GenerationCall> Make(GenerationCallSpec spec) {
    spec.id = spec.id.empty() ? "cmpl-test" : spec.id;
    spec.model = "tiny";
    spec.created = 1700000000;
    return GenerationCall::Create(spec, *tokenizer_, writer_, queue_, [this](const GenerationSummary& s) {
      summaries_.push_back(s);
      answered_before_done_.push_back(writer_->finished());
    });
  }

  static TokenEvent Tokens(int32_t choice, std::string text, std::vector<int32_t> ids = {1}) {
    TokenEvent e;
    e.choice = choice;
    e.text = std::move(text);
    e.ids = std::move(ids);
    return e;
  }

  static Json Event(const std::string& data) { return Json::parse(data); }

  static inline const Tokenizer* tokenizer_ = nullptr;
  std::shared_ptr<RecordingWriter> writer_ = std::make_shared<RecordingWriter>();
  RecordingQueue queue_;
  std::vector<GenerationSummary> summaries_;
  // Whether the answer was complete when `done` ran, per call.
  std::vector<bool> answered_before_done_;
};

TEST_F(GenerationCallTest, WholeCompletionCollectsEveryChoiceInIndexOrder) {
  GenerationCallSpec spec;
  spec.n = 2;
  spec.prompts = 2;
  auto call = Make(spec);
  auto s0 = call->SinkFor(0), s1 = call->SinkFor(1);
  call->Start({7, 8});
  s1->OnTokens(Tokens(1, "d"));
  s0->OnTokens(Tokens(0, "a"));
  s0->OnTokens(Tokens(0, "b"));
  s0->OnTokens(Tokens(1, "c"));
  s1->OnTokens(Tokens(0, "e"));
  s0->OnFinish(0, FinishReason::kStop, "");
  s0->OnFinish(1, FinishReason::kLength, "");
  s0->OnComplete({3, 3, 1}, {});
  EXPECT_FALSE(writer_->finished()) << "answered before every prompt completed";
  s1->OnFinish(0, FinishReason::kLength, "");
  s1->OnFinish(1, FinishReason::kStop, "");
  s1->OnComplete({4, 2, 0}, {});

  ASSERT_TRUE(writer_->finished());
  EXPECT_EQ(writer_->status(), 200);
  const Json r = Json::parse(writer_->body());
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["id"], "cmpl-test");
  EXPECT_EQ(r["model"], "tiny");
  ASSERT_EQ(r["choices"].size(), 4u);
  const char* texts[] = {"ab", "c", "e", "d"};
  const char* reasons[] = {"stop", "length", "length", "stop"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r["choices"][i]["index"], i);
    EXPECT_EQ(r["choices"][i]["text"], texts[i]);
    EXPECT_EQ(r["choices"][i]["finish_reason"], reasons[i]);
    EXPECT_TRUE(r["choices"][i]["logprobs"].is_null());
  }
  EXPECT_EQ(r["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(r["usage"]["completion_tokens"], 5);
  EXPECT_EQ(r["usage"]["total_tokens"], 12);
  EXPECT_EQ(r["usage"]["prompt_tokens_details"]["cached_tokens"], 1);
  ASSERT_EQ(summaries_.size(), 1u);
  EXPECT_EQ(summaries_[0].http_status, 200);
  EXPECT_EQ(summaries_[0].usage.completion_tokens, 5);
}

TEST_F(GenerationCallTest, ChatStreamHoldsEarlyEventsAndOpensWithTheRole) {
  GenerationCallSpec spec;
  spec.endpoint = GenerationEndpoint::kChat;
  spec.stream = true;
  spec.include_usage = true;
  spec.id = "chatcmpl-x";
  auto call = Make(spec);
  auto sink = call->SinkFor(0);
  // The engine may run before the handler calls Start.
  sink->OnTokens(Tokens(0, "Hel"));
  EXPECT_FALSE(writer_->streaming());
  call->Start({1});
  sink->OnTokens(Tokens(0, ""));  // held-back text: nothing to send
  sink->OnTokens(Tokens(0, "lo"));
  sink->OnFinish(0, FinishReason::kStop, "");
  sink->OnComplete({5, 3, 0}, {});

  ASSERT_TRUE(writer_->finished());
  EXPECT_EQ(writer_->status(), 200);
  EXPECT_EQ(writer_->headers().Get("Content-Type").value_or(""), "text/event-stream");
  const std::vector<std::string> ev = writer_->events();
  ASSERT_EQ(ev.size(), 6u);
  const Json first = Event(ev[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(Event(ev[1])["choices"][0]["delta"]["content"], "Hel");
  EXPECT_FALSE(Event(ev[1])["choices"][0]["delta"].contains("role"));
  EXPECT_EQ(Event(ev[2])["choices"][0]["delta"]["content"], "lo");
  const Json fin = Event(ev[3]);
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(fin["choices"][0]["delta"].empty());
  const Json usage = Event(ev[4]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 3);
  EXPECT_EQ(ev[5], "[DONE]");
}

TEST_F(GenerationCallTest, RefusalOfALaterPromptCancelsTheAcceptedOnes) {
  GenerationCallSpec spec;
  spec.prompts = 3;
  spec.stream = true;
  auto call = Make(spec);
  auto s0 = call->SinkFor(0);
  s0->OnTokens(Tokens(0, "x"));
  http::Headers h{{"Retry-After", "2"}, {"retry-after-ms", "1500"}};
  call->Abort({11, 12}, absl::ResourceExhaustedError("queue full"), h);
  EXPECT_EQ(queue_.cancelled, (std::vector<uint64_t>{11, 12}));
  ASSERT_TRUE(writer_->finished());
  EXPECT_FALSE(writer_->streaming()) << "a refused stream must be a plain error response";
  EXPECT_EQ(writer_->status(), 429);
  EXPECT_EQ(writer_->headers().Get("Retry-After").value_or(""), "2");
  EXPECT_EQ(writer_->headers().Get("retry-after-ms").value_or(""), "1500");
  const Json e = Json::parse(writer_->body());
  EXPECT_EQ(e["error"]["message"], "queue full");
  EXPECT_EQ(e["error"]["type"], "rate_limit_error");
  // The cancelled requests' last events change nothing.
  s0->OnFinish(0, FinishReason::kCancelled, "");
  s0->OnComplete({1, 1, 0}, {});
  ASSERT_EQ(summaries_.size(), 1u);
  EXPECT_EQ(summaries_[0].http_status, 429);
}

// `done` (which releases the model's lease in the server) runs before the
// answer's last bytes go out, however the call ends: a client that unloads
// the model as soon as it has its answer finds the model idle.
TEST_F(GenerationCallTest, DoneRunsBeforeTheAnswerIsComplete) {
  for (int ending = 0; ending < 5; ++ending) {
    SCOPED_TRACE(ending);
    writer_ = std::make_shared<RecordingWriter>();
    GenerationCallSpec spec;
    spec.stream = ending % 2 == 1;
    auto call = Make(spec);
    auto sink = call->SinkFor(0);
    if (ending == 4) {
      call->Abort({1}, absl::ResourceExhaustedError("queue full"), {});
    } else {
      call->Start({1});
      sink->OnTokens(Tokens(0, "a"));
      sink->OnFinish(0, ending < 2 ? FinishReason::kStop : FinishReason::kError, "forward failed");
      sink->OnComplete({1, 1, 0}, {});
    }
    EXPECT_TRUE(writer_->finished());
  }
  EXPECT_EQ(answered_before_done_, std::vector<bool>(5, false));
}

TEST_F(GenerationCallTest, ClientDisconnectCancelsEveryEngineRequest) {
  GenerationCallSpec spec;
  spec.prompts = 2;
  spec.stream = true;
  auto call = Make(spec);
  auto s0 = call->SinkFor(0), s1 = call->SinkFor(1);
  call->Start({21, 22});
  s0->OnTokens(Tokens(0, "a"));
  writer_->Disconnect();
  EXPECT_EQ(queue_.cancelled, (std::vector<uint64_t>{21, 22}));
  s0->OnFinish(0, FinishReason::kCancelled, "");
  s0->OnComplete({1, 1, 0}, {});
  s1->OnFinish(0, FinishReason::kCancelled, "");
  s1->OnComplete({1, 0, 0}, {});
  ASSERT_EQ(summaries_.size(), 1u);
  EXPECT_EQ(summaries_[0].http_status, 499);
  EXPECT_EQ(summaries_[0].finish, "cancelled");
}

TEST_F(GenerationCallTest, DisconnectBeforeStartCancelsAtOnce) {
  GenerationCallSpec spec;
  auto call = Make(spec);
  writer_->Disconnect();
  call->Start({5});
  EXPECT_EQ(queue_.cancelled, (std::vector<uint64_t>{5}));
}

TEST_F(GenerationCallTest, EngineErrorIsA500WholeAndAnErrorEventStreamed) {
  {
    auto call = Make({});
    auto sink = call->SinkFor(0);
    call->Start({1});
    sink->OnFinish(0, FinishReason::kError, "forward failed");
    sink->OnComplete({1, 0, 0}, {});
    EXPECT_EQ(writer_->status(), 500);
    EXPECT_EQ(Json::parse(writer_->body())["error"]["message"], "forward failed");
  }
  writer_ = std::make_shared<RecordingWriter>();
  GenerationCallSpec spec;
  spec.stream = true;
  auto call = Make(spec);
  auto sink = call->SinkFor(0);
  call->Start({1});
  sink->OnFinish(0, FinishReason::kError, "forward failed");
  sink->OnComplete({1, 0, 0}, {});
  const auto ev = writer_->events();
  ASSERT_GE(ev.size(), 2u);
  EXPECT_EQ(Event(ev[0])["error"]["message"], "forward failed");
  EXPECT_EQ(ev.back(), "[DONE]");
  EXPECT_TRUE(writer_->finished());
}

TEST_F(GenerationCallTest, CompletionLogprobsCarryTokensAndTextOffsets) {
  GenerationCallSpec spec;
  spec.logprobs = true;
  auto call = Make(spec);
  auto sink = call->SinkFor(0);
  call->Start({1});
  const int32_t hello = tokenizer_->Encode("Hello", false).at(0);
  const int32_t world = tokenizer_->Encode(" world", false).back();
  // Text of 3 characters in 5 bytes: offsets count characters.
  TokenEvent a = Tokens(0, "h\xC3\xA9\xC3\xA9", {hello});
  a.chosen = {{hello, -0.5f}};
  a.top = {{{hello, -0.5f}, {world, -1.5f}}};
  TokenEvent b = Tokens(0, tokenizer_->TokenBytes(world), {world});
  b.chosen = {{world, -0.25f}};
  b.top = {{{world, -0.25f}, {hello, -2.0f}}};
  sink->OnTokens(a);
  sink->OnTokens(b);
  sink->OnFinish(0, FinishReason::kLength, "");
  sink->OnComplete({1, 2, 0}, {});
  const Json r = Json::parse(writer_->body());
  const Json& lp = r["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 2u);
  EXPECT_EQ(lp["tokens"][0], tokenizer_->TokenBytes(hello));
  EXPECT_DOUBLE_EQ(lp["token_logprobs"][1].get<double>(), -0.25);
  EXPECT_EQ(lp["text_offset"][0], 0);
  EXPECT_EQ(lp["text_offset"][1], 3);
  EXPECT_DOUBLE_EQ(lp["top_logprobs"][0][tokenizer_->TokenBytes(world)].get<double>(), -1.5);
  EXPECT_EQ(r["choices"][0]["text"], "h\xC3\xA9\xC3\xA9" + tokenizer_->TokenBytes(world));
}

}  // namespace
}  // namespace swiftlet::server
