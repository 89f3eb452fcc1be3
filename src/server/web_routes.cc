// OpenAiService's browser side: the pages at /, /playground and /live with
// their files under /ui/ (embedded by src/web), and GET /stats, the JSON
// the dashboard polls.
//
// Who may see what: the pages are public (they hold no data; every call
// they make carries the key the user pastes); /stats follows the /load
// rule (an admin key with --api-keys, unless --admin-endpoints open), since
// it shows the same load figures.
#include <charconv>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/str_cat.h"
#include "core/tensor_type.h"
#include "server/error_response.h"
#include "server/openai_service.h"
#include "server/server_metrics.h"
#include "web/assets.h"

namespace swiftlet::server {
namespace {

// `since=<unix ms>` from a raw query; 0 when absent. Anything else in the
// query is ignored, as unknown JSON fields are.
absl::StatusOr<int64_t> SinceParam(std::string_view query) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (!pair.starts_with("since=")) continue;
    const std::string_view v = pair.substr(6);
    int64_t since = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), since);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || since < 0) {
      return absl::InvalidArgumentError("since: expected a non-negative integer of Unix milliseconds");
    }
    return since;
  }
  return 0;
}

nlohmann::ordered_json Targets(const LatencyTargets& t) {
  nlohmann::ordered_json j;
  j["ttft_ms"] = t.ttft_ns > 0 ? nlohmann::ordered_json(Ms(t.ttft_ns)) : nlohmann::ordered_json();
  j["tpot_ms"] = t.tpot_ns > 0 ? nlohmann::ordered_json(Ms(t.tpot_ns)) : nlohmann::ordered_json();
  return j;
}

}  // namespace

bool IsWebRoute(std::string_view route) {
  return route == "/" || route == "/playground" || route == "/live" || route == "/ui/{id}";
}

void OpenAiService::WebPage(const http::HttpRequest& request, Writer writer) {
  const int64_t start = ReceivedNs(request);
  const web::Asset* asset = web::FindAsset(request.path);
  if (asset == nullptr) {
    return void(Fail(request, "/", writer,
                     absl::NotFoundError(StrCat("no such page: ", request.path.substr(0, 256))), start));
  }
  writer->Respond(200,
                  http::Headers{{"Content-Type", std::string(asset->content_type)},
                                // Assets change with the binary: revalidate, never serve stale.
                                {"Cache-Control", "no-cache"},
                                {"X-Content-Type-Options", "nosniff"},
                                {"Referrer-Policy", "no-referrer"},
                                {"Content-Security-Policy", std::string(web::ContentSecurityPolicy())}},
                  std::string(asset->body));
  Answered(request, "/", 200, start);
}

void OpenAiService::Stats(const http::HttpRequest& request, Writer writer) {
  const int64_t start = ReceivedNs(request);
  auto since = SinceParam(request.query);
  if (!since.ok()) return void(Fail(request, "/stats", writer, since.status(), start));

  nlohmann::ordered_json j;
  j["object"] = "stats";
  j["now_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  const StatsHistoryOptions& o = stats_->options();
  j["interval_ms"] = o.interval.count();
  j["window_ms"] = o.interval.count() * o.window_samples;
  j["span_ms"] = o.interval.count() * o.capacity;
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const StatsPoint& p : stats_->Since(*since)) {
    // NaN quantiles (nothing observed) come out as null.
    points.push_back({{"t", p.unix_ms},
                      {"ttft_p50_ms", p.ttft_p50 * 1e3},
                      {"ttft_p95_ms", p.ttft_p95 * 1e3},
                      {"tpot_p50_ms", p.tpot_p50 * 1e3},
                      {"tpot_p95_ms", p.tpot_p95 * 1e3},
                      {"requests_per_s", p.requests_per_s},
                      {"refusals_per_s", p.refusals_per_s},
                      {"queue_depth", p.queue_depth},
                      {"running", p.running},
                      {"kv_used_percent", p.kv_used_fraction * 100},
                      {"tokens_per_s", p.tokens_per_s},
                      {"prompt_tokens_per_s", p.prompt_tokens_per_s}});
  }
  j["points"] = std::move(points);

  const ModelCard& m = primary_.card;
  j["model"] = {{"id", models_.default_name()},   {"architecture", m.architecture}, {"quantization", m.quantization},
                {"parameters", m.parameters}, {"weight_bytes", m.weight_bytes}, {"context", engine_.context()},
                {"context_train", m.context_train}, {"layers", m.layers},     {"embedding", m.embedding},
                {"heads", m.heads},           {"kv_heads", m.kv_heads},         {"ffn", m.ffn},
                {"vocab", m.vocab}};
  const EngineConfig& cfg = engine_.config();
  const EngineState state = engine_.state();
  j["memory"] = {{"resident_bytes", ProcessResidentBytes()},
                 {"kv_cache_bytes", cfg.kv_memory_bytes},
                 {"kv_blocks_total", state.kv_blocks_total},
                 {"kv_block_tokens", cfg.kv_block_tokens},
                 {"kv_type", std::string(NameOf(cfg.kv_type))}};
  j["slo"] = {{"interactive", Targets(cfg.slo_interactive)},
              {"batch", Targets(cfg.slo_batch)},
              {"embedding", Targets(cfg.slo_embedding)}};
  j["engine"] = {{"threads", cfg.threads}, {"max_running", cfg.max_running}, {"max_queue", cfg.max_queue}};
  j["draining"] = draining_.load(std::memory_order_acquire);
  RespondJson(*writer, 200, j.dump());
  Answered(request, "/stats", 200, start);
}

}  // namespace swiftlet::server
