// EmbeddingCall turns scripted engine events into the /v1/embeddings
// answer; here, the order of its end: `done` (which releases the model's
// lease in the server) runs before the answer is complete, however the
// call ends, so a client that unloads the model as soon as it has its
// answer finds the model idle.
#include "server/embedding_call.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "recording_queue.h"
#include "recording_writer.h"

namespace swiftlet::server {
namespace {

TEST(EmbeddingCallTest, DoneRunsBeforeTheAnswerIsComplete) {
  RecordingQueue queue;
  for (int ending = 0; ending < 3; ++ending) {
    SCOPED_TRACE(ending);
    auto writer = std::make_shared<RecordingWriter>();
    std::vector<bool> answered_before_done;
    EmbeddingCallSpec spec;
    spec.model = "tiny";
    spec.inputs = 2;
    auto call = EmbeddingCall::Create(spec, writer, queue, [&](const EmbeddingSummary&) {
      answered_before_done.push_back(writer->finished());
    });
    if (ending == 2) {
      call->Abort({1}, absl::ResourceExhaustedError("queue full"), {});
    } else {
      auto s0 = call->SinkFor(0), s1 = call->SinkFor(1);
      call->Start({1, 2});
      s0->OnEmbedding({0.6f, 0.8f});
      s1->OnEmbedding({1.0f, 0.0f});
      s0->OnFinish(0, FinishReason::kStop, "");
      s1->OnFinish(0, ending == 0 ? FinishReason::kStop : FinishReason::kError, "forward failed");
      s0->OnComplete({3, 0, 0}, {});
      s1->OnComplete({2, 0, 0}, {});
    }
    ASSERT_TRUE(writer->finished());
    EXPECT_EQ(answered_before_done, std::vector<bool>{false});
    const int want_status[] = {200, 500, 429};
    EXPECT_EQ(writer->status(), want_status[ending]);
    if (ending == 0) {
      const nlohmann::json r = nlohmann::json::parse(writer->body());
      ASSERT_EQ(r["data"].size(), 2u);
      EXPECT_EQ(r["data"][1]["embedding"], (std::vector<double>{1.0, 0.0}));
      EXPECT_EQ(r["usage"]["prompt_tokens"], 5);
    }
  }
}

}  // namespace
}  // namespace swiftlet::server
