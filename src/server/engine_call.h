// What GenerationCall and EmbeddingCall (one HTTP request served by one or
// more engine requests) share: submitting the engine requests, and
// cancelling them when the client goes away before the answer.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/request.h"
#include "http/response_writer.h"
#include "server/openai_mapping.h"

namespace swiftlet::server {

// On the handler's (I/O) thread, once per call. Submits `requests` to
// `queue`, the i-th with call.SinkFor(i). All accepted: call.Start(ids).
// One refused: call.Abort(the accepted ids, the refusal's answer), and the
// rest are not submitted.
template <class Call>
void SubmitAll(RequestQueue& queue, Call& call, std::vector<Request> requests) {
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].sink = call.SinkFor(i);
    const SubmitResult result = queue.Submit(std::move(requests[i]));
    if (!result.accepted()) {
      auto [status, headers] = RefusalAnswer(result);
      call.Abort(std::move(ids), status, std::move(headers));
      return;
    }
    ids.push_back(result.id);
  }
  call.Start(std::move(ids));
}

// Registers on `writer`: when the client goes away, `ids` are cancelled,
// unless the call was answered first. Registered without the call's lock:
// the callback may run at once (the client already left). Once a call is
// answered its requests are finished or cancelled, and the caller's `done`
// may have let its model (the queue) go, so the callback cancels only
// before that, under the lock `done` runs under (the call's mu_, with
// ended_ set when it is answered). A friend of each Call.
template <class Call>
void CancelOnClientClose(http::ResponseWriter& writer, const std::shared_ptr<Call>& call,
                         std::vector<uint64_t> ids) {
  writer.OnClose([self = std::weak_ptr<Call>(call), ids = std::move(ids)] {
    std::shared_ptr<Call> c = self.lock();
    if (c == nullptr) return;
    std::lock_guard<std::mutex> lock(c->mu_);
    if (c->ended_) return;
    for (uint64_t id : ids) c->queue_.Cancel(id);
  });
}

}  // namespace swiftlet::server
