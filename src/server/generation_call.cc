#include "server/generation_call.h"

#include <algorithm>
#include <utility>

#include "api/errors.h"
#include "server/engine_call.h"
#include "server/error_response.h"
#include "text/utf8.h"

namespace swiftlet::server {

class GenerationCall::Sink final : public RequestSink {
 public:
  Sink(std::shared_ptr<GenerationCall> call, size_t prompt) : call_(std::move(call)), prompt_(prompt) {}
  void OnTokens(const TokenEvent& event) override { call_->OnTokens(prompt_, event); }
  void OnFinish(int32_t choice, FinishReason reason, const std::string& message) override {
    call_->OnFinish(prompt_, choice, reason, message);
  }
  void OnComplete(const Usage& usage, const Timings& timings) override {
    call_->OnComplete(prompt_, usage, timings);
  }

 private:
  const std::shared_ptr<GenerationCall> call_;
  const size_t prompt_;
};

std::shared_ptr<GenerationCall> GenerationCall::Create(GenerationCallSpec spec,
                                                       const Tokenizer& tokenizer,
                                                       std::shared_ptr<http::ResponseWriter> writer,
                                                       RequestQueue& queue, Done done) {
  return std::shared_ptr<GenerationCall>(
      new GenerationCall(std::move(spec), tokenizer, std::move(writer), queue, std::move(done)));
}

GenerationCall::GenerationCall(GenerationCallSpec spec, const Tokenizer& tokenizer,
                               std::shared_ptr<http::ResponseWriter> writer, RequestQueue& queue,
                               Done done)
    : spec_(std::move(spec)),
      tokenizer_(tokenizer),
      writer_(std::move(writer)),
      queue_(queue),
      done_(std::move(done)),
      choices_(spec_.prompts * static_cast<size_t>(spec_.n)) {
  summary_.timings.ttft_ns = -1;
}

std::shared_ptr<RequestSink> GenerationCall::SinkFor(size_t prompt_index) {
  return std::make_shared<Sink>(shared_from_this(), prompt_index);
}

api::CompletionResponse GenerationCall::Frame() const {
  api::CompletionResponse r;
  if (spec_.endpoint == GenerationEndpoint::kCompletions) {
    r.kind = api::ResponseKind::kCompletion;
  } else {
    r.kind = spec_.stream ? api::ResponseKind::kChatCompletionChunk : api::ResponseKind::kChatCompletion;
  }
  r.id = spec_.id;
  r.created = spec_.created;
  r.model = spec_.model;
  return r;
}

std::vector<api::TokenLogprob> GenerationCall::Logprobs(const TokenEvent& event, int64_t offset) const {
  std::vector<api::TokenLogprob> out;
  const size_t n = std::min(event.ids.size(), event.chosen.size());
  for (size_t i = 0; i < n; ++i) {
    api::TokenLogprob t;
    t.token = tokenizer_.TokenBytes(event.chosen[i].id);
    t.logprob = event.chosen[i].logprob;
    t.text_offset = offset;
    if (i < event.top.size()) {
      for (const TokenLogprob& alt : event.top[i]) {
        t.top.push_back({tokenizer_.TokenBytes(alt.id), alt.logprob});
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

void GenerationCall::Emit(std::string event) {
  if (!started_) {
    held_.push_back(std::move(event));
    return;
  }
  // False past the soft send limit: the event is queued all the same, and
  // past the hard limit the writer cancels the stream (and so the request).
  writer_->WriteEvent(event);
}

void GenerationCall::OnTokens(size_t prompt, const TokenEvent& event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  const int32_t index = static_cast<int32_t>(prompt) * spec_.n + event.choice;
  ChoiceState& c = choices_[static_cast<size_t>(index)];
  std::vector<api::TokenLogprob> logprobs;
  if (spec_.logprobs) logprobs = Logprobs(event, c.text_chars);
  // OpenAI's text_offset counts characters (code points), not bytes.
  c.text_chars += CountUtf8Chars(event.text);
  if (!spec_.stream || spec_.keep_text) c.text += event.text;
  if (!spec_.stream) {
    c.logprobs.insert(c.logprobs.end(), logprobs.begin(), logprobs.end());
    return;
  }
  if (event.text.empty() && logprobs.empty()) return;
  api::CompletionResponse chunk = Frame();
  api::Choice choice;
  choice.index = index;
  choice.text = event.text;
  if (spec_.logprobs) choice.logprobs = std::move(logprobs);
  chunk.choices.push_back(std::move(choice));
  Emit(api::SerializeCompletionResponse(chunk));
}

void GenerationCall::OnFinish(size_t prompt, int32_t choice_index, FinishReason reason,
                              const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  const int32_t index = static_cast<int32_t>(prompt) * spec_.n + choice_index;
  ChoiceState& c = choices_[static_cast<size_t>(index)];
  c.finished = true;
  c.finish = reason;
  summary_.finish = FinishReasonName(reason);
  if (reason == FinishReason::kError && error_.empty()) error_ = message.empty() ? "engine error" : message;
  if (reason == FinishReason::kCancelled) engine_cancelled_ = true;
  if (!spec_.stream || writer_->cancelled()) return;
  if (reason == FinishReason::kError) {
    api::ApiError e = api::ApiErrorFromStatus(absl::InternalError(error_));
    Emit(api::SerializeError(e));
  }
  api::CompletionResponse chunk = Frame();
  api::Choice choice;
  choice.index = index;
  if (spec_.endpoint == GenerationEndpoint::kCompletions) choice.text = "";
  choice.finish_reason = OpenAiFinishReason(reason);
  chunk.choices.push_back(std::move(choice));
  Emit(api::SerializeCompletionResponse(chunk));
}

void GenerationCall::OnComplete(size_t /*prompt*/, const Usage& usage, const Timings& timings) {
  std::lock_guard<std::mutex> lock(mu_);
  Usage& u = summary_.usage;
  u.prompt_tokens += usage.prompt_tokens;
  u.completion_tokens += usage.completion_tokens;
  u.cached_prompt_tokens += usage.cached_prompt_tokens;
  Timings& t = summary_.timings;
  t.received_ns = t.received_ns == 0 ? timings.received_ns : std::min(t.received_ns, timings.received_ns);
  t.queued_ns = std::max(t.queued_ns, timings.queued_ns);
  t.prefill_ns = std::max(t.prefill_ns, timings.prefill_ns);
  t.tpot_ns = std::max(t.tpot_ns, timings.tpot_ns);
  t.e2e_ns = std::max(t.e2e_ns, timings.e2e_ns);
  t.ttft_estimate_ns = std::max(t.ttft_estimate_ns, timings.ttft_estimate_ns);
  if (timings.ttft_ns >= 0 && (!have_ttft_ || timings.ttft_ns < t.ttft_ns)) {
    t.ttft_ns = timings.ttft_ns;
    have_ttft_ = true;
  }
  completed_ += 1;
  FinishIfDone();
}

void GenerationCall::Start(std::vector<uint64_t> engine_ids) {
  CancelOnClientClose(*writer_, shared_from_this(), std::move(engine_ids));
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  started_ = true;
  if (spec_.stream) {
    writer_->StartStream(200, http::Headers{{"Content-Type", "text/event-stream"},
                                            {"Cache-Control", "no-cache"}});
    if (spec_.endpoint == GenerationEndpoint::kChat) {
      // OpenAI opens each choice with its role.
      for (size_t i = 0; i < choices_.size(); ++i) {
        api::CompletionResponse chunk = Frame();
        api::Choice choice;
        choice.index = static_cast<int32_t>(i);
        choice.role = "assistant";
        choice.text = "";
        chunk.choices.push_back(std::move(choice));
        writer_->WriteEvent(api::SerializeCompletionResponse(chunk));
      }
    }
    for (std::string& event : held_) writer_->WriteEvent(event);
    held_.clear();
  }
  FinishIfDone();
}

void GenerationCall::Abort(std::vector<uint64_t> accepted, const absl::Status& status,
                           http::Headers headers) {
  for (uint64_t id : accepted) queue_.Cancel(id);
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  ReportError(status, std::move(headers));
}

void GenerationCall::FinishIfDone() {
  if (!started_ || ended_ || completed_ < spec_.prompts) return;
  if (writer_->cancelled()) return Report(499, [] {});
  if (spec_.stream) {
    return Report(200, [this]() {
      if (engine_cancelled_) {
        // Cancelled by the server (shutdown), not the client: say so.
        Emit(api::SerializeError(api::ApiErrorFromStatus(
            absl::UnavailableError("the server is shutting down; the request was cancelled"))));
      }
      if (spec_.include_usage) {
        api::CompletionResponse chunk = Frame();
        chunk.usage = api::UsageInfo{summary_.usage.prompt_tokens, summary_.usage.completion_tokens,
                                     summary_.usage.cached_prompt_tokens};
        Emit(api::SerializeCompletionResponse(chunk));
      }
      Emit(std::string(api::kStreamDone));
      writer_->End();
    });
  }
  if (!error_.empty()) return ReportError(absl::InternalError(error_), {});
  if (engine_cancelled_) {
    return ReportError(absl::UnavailableError("the server is shutting down; the request was cancelled"), {});
  }
  Report(200, [this]() { RespondWhole(); });
}

void GenerationCall::RespondWhole() {
  api::CompletionResponse r = Frame();
  for (size_t i = 0; i < choices_.size(); ++i) {
    ChoiceState& c = choices_[i];
    api::Choice choice;
    choice.index = static_cast<int32_t>(i);
    choice.text = c.text;
    if (spec_.endpoint == GenerationEndpoint::kChat) choice.role = "assistant";
    if (spec_.logprobs) choice.logprobs = std::move(c.logprobs);
    choice.finish_reason = OpenAiFinishReason(c.finish);
    r.choices.push_back(std::move(choice));
  }
  r.usage = api::UsageInfo{summary_.usage.prompt_tokens, summary_.usage.completion_tokens,
                           summary_.usage.cached_prompt_tokens};
  RespondJson(*writer_, 200, api::SerializeCompletionResponse(r));
}

void GenerationCall::ReportError(const absl::Status& status, http::Headers headers) {
  Report(ErrorHttpStatus(status),
         [&]() { RespondError(*writer_, status, std::move(headers)); });
}

void GenerationCall::Report(int http_status, const std::function<void()>& respond) {
  ended_ = true;
  summary_.http_status = http_status;
  if (spec_.keep_text) {
    for (const ChoiceState& c : choices_) summary_.output += c.text;
  }
  if (done_) done_(summary_);
  respond();
}

}  // namespace swiftlet::server
