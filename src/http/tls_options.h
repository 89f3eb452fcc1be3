// TLS settings of the HTTP server and of the clients (HttpClient,
// WebSocketClient). Plain C++: OpenSSL and Asio's ssl stream stay in http/'s
// .cc files (tls_context.cc builds the OpenSSL side from these).
//
// What every TLS connection of swiftlet gets, server or client: TLS 1.2 or
// 1.3 only; for TLS 1.2 only ECDHE key exchange with AEAD ciphers (AES-GCM,
// ChaCha20-Poly1305); no TLS compression (CRIME); no renegotiation (a cheap
// way for a client to make the server burn CPU).
#pragma once

#include <string>

#include "absl/status/status.h"

namespace swiftlet::http {

// The server's certificate and key. Either the PEM files (read at Start and
// again at each HttpServer::ReloadTls) or the PEM text itself; a file, when
// named, wins over the text.
struct TlsServerOptions {
  std::string cert_file;  // The certificate chain, leaf first.
  std::string key_file;   // Its private key (unencrypted PEM).
  std::string cert_pem;
  std::string key_pem;

  // True when a certificate is given: the server then speaks only https.
  bool enabled() const { return !cert_file.empty() || !cert_pem.empty(); }
};

// A client's TLS: off (plain http/ws) unless use_tls. The server's
// certificate chain must verify against the trusted authorities and name
// the host connected to (a DNS name, or an IP address in its IP SANs).
struct TlsClientOptions {
  bool use_tls = false;  // https:// and wss:// when true.
  // The authorities to trust (PEM, one or more certificates): a file, or
  // the text itself. Neither: the system's default trust store.
  std::string ca_file;
  std::string ca_pem;
  // The name the certificate must carry and that is sent as SNI; empty:
  // the host the client connects to.
  std::string server_name;
};

// InvalidArgument naming the file and what is wrong (unreadable, no
// certificate, key does not match the certificate, ...); OK when
// `options` would start a server. Reads the files. Any thread.
absl::Status CheckTlsServerOptions(const TlsServerOptions& options);

// InvalidArgument naming the CA file and what is wrong; OK when TLS is off
// or the authorities load. Any thread.
absl::Status CheckTlsClientOptions(const TlsClientOptions& options);

}  // namespace swiftlet::http
