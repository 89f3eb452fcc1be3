// A RequestQueue for the translation tests: it records the groups
// submitted and answers them as the test says, so no model is needed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/request.h"

namespace swiftlet::translate {

struct ScriptedEngine final : RequestQueue {
  std::vector<Request> submitted;
  std::vector<uint64_t> cancelled;
  RefusalReason refuse_from = RefusalReason::kNone;
  size_t refuse_after = SIZE_MAX;  // Submissions accepted before refusals start.
  SubmitResult Submit(Request r) override {
    SubmitResult result;
    if (submitted.size() >= refuse_after) {
      result.refused = refuse_from;
      result.message = "scripted refusal";
      result.retry_after_ms = 1500;
      return result;
    }
    submitted.push_back(std::move(r));
    result.id = submitted.size();
    return result;
  }
  void Cancel(uint64_t id) override { cancelled.push_back(id); }
  // Answers group `g`: choice i says outputs[i] and finishes with `reason`.
  void Answer(size_t g, const std::vector<std::string>& outputs, FinishReason reason = FinishReason::kStop) {
    Request& r = submitted[g];
    for (size_t i = 0; i < outputs.size(); ++i) {
      TokenEvent ev;
      ev.choice = static_cast<int32_t>(i);
      ev.text = outputs[i];
      r.sink->OnTokens(ev);
      r.sink->OnFinish(static_cast<int32_t>(i), reason, reason == FinishReason::kError ? "boom" : "");
    }
    Usage u;
    u.prompt_tokens = 10;
    u.completion_tokens = static_cast<int64_t>(outputs.size());
    r.sink->OnComplete(u, Timings{});
  }
};

}  // namespace swiftlet::translate
