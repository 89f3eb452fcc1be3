// What the server adds per streamed token, beside the decode step itself:
//
//   BM_ChunkOnEngineThread   GenerationCall::OnTokens for one token of a
//                            streamed chat completion: the OpenAI chunk's
//                            JSON and the hand-off to the writer, i.e. the
//                            work the engine thread does per token.
//   BM_SseOverLoopback       one SSE event through the real HTTP server and
//                            client over loopback (strand post, chunked
//                            framing, socket write, client parse): the I/O
//                            threads' work per token, measured as events/s.
//
// Figures and the decode step they are compared with: docs/PERFORMANCE.md.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "api/response_codec.h"
#include "gguf/gguf_file.h"
#include "http/client.h"
#include "http/server.h"
#include "server/generation_call.h"

namespace swiftlet::server {
namespace {

// Accepts everything, keeps nothing: only the caller's own cost is timed.
class NullWriter final : public http::ResponseWriter {
 public:
  bool Respond(int, http::Headers, std::string) override { return true; }
  bool StartStream(int, http::Headers) override { return true; }
  bool Write(std::string_view d) override { bytes += d.size(); return true; }
  bool WriteEvent(std::string_view d) override { bytes += d.size(); return true; }
  bool End() override { return true; }
  void OnClose(std::function<void()>) override {}
  bool cancelled() const override { return false; }
  size_t buffered_bytes() const override { return 0; }
  size_t bytes = 0;
};

class NullQueue final : public RequestQueue {
 public:
  SubmitResult Submit(Request) override { return {}; }
  void Cancel(uint64_t) override {}
};

const Tokenizer& Vocab() {
  static const Tokenizer* t = [] {
    auto f = GgufFile::Open(std::string(SWIFTLET_SHARED_DIR) + "/testdata/vocab/ggml-vocab-llama-spm.gguf");
    if (!f.ok()) std::abort();
    auto tok = Tokenizer::FromGguf(**f);
    if (!tok.ok()) std::abort();
    return tok->release();
  }();
  return *t;
}

void BM_ChunkOnEngineThread(benchmark::State& state) {
  auto writer = std::make_shared<NullWriter>();
  NullQueue queue;
  GenerationCallSpec spec;
  spec.endpoint = GenerationEndpoint::kChat;
  spec.stream = true;
  spec.id = "chatcmpl-0123456789abcdef01234567";
  spec.model = "smollm2-135m-q8";
  spec.created = 1796250000;
  auto call = GenerationCall::Create(spec, Vocab(), writer, queue, nullptr);
  auto sink = call->SinkFor(0);
  call->Start({1});
  TokenEvent ev;
  ev.ids = {1234};
  ev.text = " word";
  for (auto _ : state) {
    sink->OnTokens(ev);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["bytes_per_token"] =
      static_cast<double>(writer->bytes) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_ChunkOnEngineThread);

void BM_SseOverLoopback(benchmark::State& state) {
  const int events = static_cast<int>(state.range(0));
  api::CompletionResponse chunk;
  chunk.kind = api::ResponseKind::kChatCompletionChunk;
  chunk.id = "chatcmpl-0123456789abcdef01234567";
  chunk.model = "smollm2-135m-q8";
  chunk.created = 1796250000;
  api::Choice c;
  c.text = " word";
  chunk.choices.push_back(c);
  const std::string event = api::SerializeCompletionResponse(chunk);

  http::HttpServerOptions so;
  so.port = 0;
  so.io_threads = 1;
  http::HttpServer server(so, [&](http::HttpRequest, std::shared_ptr<http::ResponseWriter> w) {
    // Written from another thread, as the engine thread does.
    std::thread([w, events, &event] {
      w->StartStream(200, http::Headers{{"Content-Type", "text/event-stream"}});
      for (int i = 0; i < events; ++i) {
        // Respect backpressure the way a fast engine would meet it.
        while (w->buffered_bytes() > (128u << 10)) std::this_thread::yield();
        w->WriteEvent(event);
      }
      w->End();
    }).detach();
  });
  if (!server.Start().ok()) {
    state.SkipWithError("server did not start");
    return;
  }
  http::HttpClientOptions co;
  co.port = server.port();
  http::HttpClient client(co);
  size_t received = 0;
  for (auto _ : state) {
    std::promise<void> done;
    std::atomic<size_t> n{0};
    http::ClientCallbacks cb;
    cb.on_event = [&](std::string_view) { n.fetch_add(1, std::memory_order_relaxed); };
    cb.on_done = [&](absl::Status, http::ClientResponse) { done.set_value(); };
    http::ClientRequest req;
    req.method = "GET";
    req.target = "/stream";
    client.Send(std::move(req), std::move(cb));
    done.get_future().wait();
    received += n.load();
  }
  if (received != static_cast<size_t>(events) * state.iterations()) state.SkipWithError("events lost");
  state.SetItemsProcessed(static_cast<int64_t>(received));
  server.Stop(std::chrono::milliseconds(100));
}
BENCHMARK(BM_SseOverLoopback)->Arg(20000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace swiftlet::server

BENCHMARK_MAIN();
