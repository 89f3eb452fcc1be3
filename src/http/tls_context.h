// Internal to http/: OpenSSL contexts built from tls_options.h, the
// per-connection client set-up (SNI, host name check) and readable TLS
// errors. Names Asio's ssl types, so only http/ .cc files that already
// compile asio include it.
//
// A context is immutable once built and shared by every connection made
// with it (each connection holds a shared_ptr, so a reload that swaps in a
// new context leaves connections made with the old one working).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

#include "absl/status/statusor.h"
#include "http/tls_options.h"

namespace swiftlet::http::internal {

using SslContext = boost::asio::ssl::context;
using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

// The server's context: the certificate chain and key of `options`
// (enabled() must hold), checked to match. InvalidArgument naming the file
// and the problem otherwise.
absl::StatusOr<std::shared_ptr<SslContext>> MakeServerTlsContext(const TlsServerOptions& options);

// A client's context: peer verification on, trusting the authorities of
// `options` (or the system's). Null when options.use_tls is false.
absl::StatusOr<std::shared_ptr<SslContext>> MakeClientTlsContext(const TlsClientOptions& options);

// Before a client handshake on `stream`: sends `name` as SNI (unless it is
// an IP address) and makes the handshake fail unless the certificate names
// it. Error if OpenSSL refuses the name.
absl::Status PrepareClientTls(TlsStream& stream, const std::string& name);

// What went wrong in a handshake, for a message: OpenSSL's reason, and for
// a certificate that did not verify, why ("self-signed certificate in
// certificate chain", "hostname mismatch", ...).
std::string TlsErrorText(TlsStream& stream, const boost::system::error_code& ec);

}  // namespace swiftlet::http::internal
