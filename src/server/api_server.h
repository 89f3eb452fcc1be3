// The HTTP side of `swiftlet serve`: the OpenAI-compatible service
// (server/openai_service.h) on an HTTP server, with the request log. What
// the CLI starts once the model, tokenizer and engine are up; the transport
// and the API codec stay behind this header.
//
// Thread-safety: Start, BeginDrain and Stop from one thread (the CLI's);
// in_flight, port, tls and ReloadTls from any.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace swiftlet::server {

class ModelRegistry;  // server/model_registry.h

struct ApiServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0: an ephemeral port, see port().
  int io_threads = 2;
  size_t max_connections = 10000;
  uint64_t max_body_bytes = 8 << 20;
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{30'000};
  std::chrono::milliseconds idle_timeout{60'000};
  int32_t max_tokens_cap = 0;        // 0: each model's context.
  bool log_content = false;          // Prompts and outputs in the request log.
  // The translation cache: "memory" (in-process LRU), "off", or
  // "redis://HOST:PORT" (see CheckTranslateCacheSpec).
  std::string translate_cache = "memory";
  uint64_t translate_cache_bytes = uint64_t{64} << 20;  // memory: the LRU's bound.
  std::chrono::milliseconds translate_cache_ttl{3'600'000};
  // Origins allowed to open a live translation stream (empty: any).
  std::vector<std::string> stream_origins;
  // API keys (server/api_keys.h); empty: no authentication.
  std::string api_keys_path;
  bool admin_endpoints_open = false;  // /metrics and /load without an admin key.
  bool cache_scope_per_key = true;    // Prefix and translation caches per key.
  // The audit log (server/audit_log.h); empty: none.
  std::string audit_log_path;
  uint64_t audit_log_max_bytes = uint64_t{100} << 20;
  int audit_log_keep = 5;
  // HTTPS (and wss) when set: PEM files of the certificate chain and its
  // key, read at Start and at each ReloadTls.
  std::string tls_cert_file;
  std::string tls_key_file;
};

// InvalidArgument naming the flag when `spec` is not a translate_cache
// value above (so serve can refuse it before the model loads).
absl::Status CheckTranslateCacheSpec(const std::string& spec);

// InvalidArgument naming --tls-cert or --tls-key when only one is given or
// the files do not make a usable certificate and key (so serve can refuse
// them before the model loads). OK when neither is given.
absl::Status CheckTlsFiles(const std::string& cert_file, const std::string& key_file);

class ApiServer {
 public:
  // Binds and starts serving the registry's models (started: its default
  // model hot). Shut down in order: Stop, then stop the registry (its
  // engines end what they run, its waiters are answered), then destroy
  // the server.
  static absl::StatusOr<std::unique_ptr<ApiServer>> Start(const ApiServerOptions& options, ModelRegistry& models);
  ~ApiServer();

  uint16_t port() const;
  // New work gets 503 and /ready turns 503; /health, /load and /metrics
  // still answer.
  void BeginDrain();
  // Generation and embedding requests not finished yet.
  int64_t in_flight() const;
  // Reads the API key file again and swaps the table in (SIGHUP); requests
  // in flight keep their key. On error the old table stays.
  absl::Status ReloadApiKeys();
  // True when serving https.
  bool tls() const;
  // Reads the TLS certificate and key files again (for SIGHUP): new
  // connections use them, open ones keep theirs. On error the certificate
  // in use stays. FailedPrecondition when not serving https. Any thread.
  absl::Status ReloadTls();
  // Closes every connection (what is still running is cancelled through
  // its closed connection), waiting up to `linger` for writes to finish.
  void Stop(std::chrono::milliseconds linger);

 private:
  struct Parts;
  explicit ApiServer(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace swiftlet::server
