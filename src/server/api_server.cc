#include "server/api_server.h"

#include <cstdio>
#include <utility>

#include "core/clock.h"
#include "core/str_cat.h"
#include "http/server.h"
#include "translate/redis_cache.h"
#include "translate/translation_cache.h"
#include "server/error_response.h"
#include "server/openai_service.h"
#include "server/request_log.h"

namespace swiftlet::server {

absl::Status CheckTranslateCacheSpec(const std::string& spec) {
  if (spec == "memory" || spec == "off") return absl::OkStatus();
  if (spec.rfind("redis://", 0) == 0) {
    auto redis = translate::ParseRedisUrl(spec);
    if (!redis.ok()) return absl::InvalidArgumentError(StrCat("--translate-cache: ", redis.status().message()));
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      StrCat("--translate-cache: \"", spec, "\" is not memory, off or redis://HOST:PORT"));
}

absl::Status CheckTlsFiles(const std::string& cert_file, const std::string& key_file) {
  if (cert_file.empty() && key_file.empty()) return absl::OkStatus();
  if (cert_file.empty()) return absl::InvalidArgumentError("--tls-key needs --tls-cert");
  if (key_file.empty()) return absl::InvalidArgumentError("--tls-cert needs --tls-key");
  http::TlsServerOptions tls;
  tls.cert_file = cert_file;
  tls.key_file = key_file;
  absl::Status s = http::CheckTlsServerOptions(tls);
  if (!s.ok()) return absl::InvalidArgumentError(StrCat("--tls-cert/--tls-key: ", s.message()));
  return absl::OkStatus();
}

namespace {

absl::StatusOr<std::shared_ptr<translate::TranslationCache>> MakeTranslateCache(const ApiServerOptions& o) {
  SWIFTLET_RETURN_IF_ERROR(CheckTranslateCacheSpec(o.translate_cache));
  if (o.translate_cache == "off") return std::shared_ptr<translate::TranslationCache>();
  if (o.translate_cache.rfind("redis://", 0) == 0) {
    SWIFTLET_ASSIGN_OR_RETURN(translate::RedisCacheOptions redis, translate::ParseRedisUrl(o.translate_cache));
    redis.ttl_ms = o.translate_cache_ttl.count();
    return std::shared_ptr<translate::TranslationCache>(std::make_shared<translate::RedisCache>(redis));
  }
  const int64_t ttl_ns = static_cast<int64_t>(o.translate_cache_ttl.count()) * kNsPerMs;
  return std::shared_ptr<translate::TranslationCache>(
      std::make_shared<translate::MemoryCache>(o.translate_cache_bytes, ttl_ns));
}

}  // namespace

struct ApiServer::Parts {
  std::string api_keys_path;
  std::unique_ptr<AuditLog> audit;
  RequestLog log;
  std::unique_ptr<OpenAiService> service;
  std::unique_ptr<http::HttpServer> http;
  std::string tls_cert_file;  // Empty: plain http.
};

ApiServer::ApiServer(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

// The HTTP server goes first (Parts' members are destroyed in reverse), so
// no handler runs into a destroyed service.
ApiServer::~ApiServer() = default;

absl::StatusOr<std::unique_ptr<ApiServer>> ApiServer::Start(const ApiServerOptions& o, ModelRegistry& models) {
  std::unique_ptr<AuditLog> audit;
  if (!o.audit_log_path.empty()) {
    AuditLogOptions ao;
    ao.path = o.audit_log_path;
    ao.max_bytes = o.audit_log_max_bytes;
    ao.keep = o.audit_log_keep;
    ao.log_content = o.log_content;
    SWIFTLET_ASSIGN_OR_RETURN(audit, AuditLog::Open(ao));
  }
  auto parts = std::unique_ptr<Parts>(
      new Parts{o.api_keys_path, std::move(audit), RequestLog(stderr, o.log_content), nullptr, nullptr,
                o.tls_cert_file});
  ServiceConfig sc;
  SWIFTLET_ASSIGN_OR_RETURN(sc.translate_cache, MakeTranslateCache(o));
  if (!o.api_keys_path.empty()) {
    SWIFTLET_ASSIGN_OR_RETURN(sc.api_keys, ApiKeyTable::Load(o.api_keys_path));
  }
  sc.admin_endpoints_open = o.admin_endpoints_open;
  sc.cache_scope_per_key = o.cache_scope_per_key;
  sc.stream_origins = o.stream_origins;
  sc.max_tokens_cap = o.max_tokens_cap;
  sc.limits.max_body_bytes = o.max_body_bytes;
  parts->service = std::make_unique<OpenAiService>(models, parts->log, sc, parts->audit.get());

  http::HttpServerOptions ho;
  ho.host = o.host;
  ho.port = o.port;
  ho.io_threads = o.io_threads;
  ho.max_connections = o.max_connections;
  ho.max_body_bytes = o.max_body_bytes;
  ho.header_timeout = o.header_timeout;
  ho.body_timeout = o.body_timeout;
  ho.idle_timeout = o.idle_timeout;
  ho.error_body = TransportErrorBody;
  ho.tls.cert_file = o.tls_cert_file;
  ho.tls.key_file = o.tls_key_file;
  OpenAiService* service = parts->service.get();
  parts->http = std::make_unique<http::HttpServer>(
      ho, [service](http::HttpRequest request, std::shared_ptr<http::ResponseWriter> writer) {
        service->Handle(std::move(request), std::move(writer));
      });
  http::HttpServer* server = parts->http.get();
  parts->service->set_connection_counter([server] { return server->open_connections(); });
  SWIFTLET_RETURN_IF_ERROR(parts->http->Start());
  return std::unique_ptr<ApiServer>(new ApiServer(std::move(parts)));
}

uint16_t ApiServer::port() const { return parts_->http->port(); }
void ApiServer::BeginDrain() { parts_->service->BeginDrain(); }
int64_t ApiServer::in_flight() const { return parts_->service->in_flight(); }

absl::Status ApiServer::ReloadApiKeys() {
  if (parts_->api_keys_path.empty()) return absl::FailedPreconditionError("no --api-keys file to reload");
  SWIFTLET_ASSIGN_OR_RETURN(auto table, ApiKeyTable::Load(parts_->api_keys_path));
  return parts_->service->ReloadApiKeys(std::move(table));
}
bool ApiServer::tls() const { return !parts_->tls_cert_file.empty(); }
absl::Status ApiServer::ReloadTls() { return parts_->http->ReloadTls(); }
void ApiServer::Stop(std::chrono::milliseconds linger) { parts_->http->Stop(linger); }

}  // namespace swiftlet::server
