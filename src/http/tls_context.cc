// OpenSSL contexts for the server and the clients. PEM is parsed here with
// OpenSSL's own calls rather than Asio's wrappers, so each failure can name
// the file and the part that is wrong, and so an encrypted key fails with
// a message instead of OpenSSL prompting for a pass phrase on the terminal.
#include "http/tls_context.h"

#include <utility>  // Before asio: Boost 1.74's awaitable.hpp needs std::exchange.

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/ip/address.hpp>

#include "core/status.h"
#include "core/str_cat.h"

namespace swiftlet::http {
namespace internal {
namespace {

// Certificates and keys are a few KiB; a bound keeps a mistyped path to a
// large file from being read whole.
constexpr std::streamsize kMaxPemBytes = 1 << 20;

// TLS 1.2 suites: ECDHE only (forward secrecy), AEAD only. TLS 1.3's are
// all AEAD and stay OpenSSL's default.
constexpr char kTls12Ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

// Drains OpenSSL's error queue of this thread; its first reason, or
// `fallback` when it was empty.
std::string TakeOpenSslError(std::string_view fallback) {
  unsigned long first = ERR_get_error();
  if (first == 0) return std::string(fallback);
  ERR_clear_error();
  const char* reason = ERR_reason_error_string(first);
  return reason != nullptr ? reason : StrCat("OpenSSL error ", first);
}

// Refuses to decrypt: keys must be given unencrypted (a pass phrase would
// have to sit beside them anyway).
int NoPassword(char*, int, int, void*) { return 0; }

absl::StatusOr<std::string> ReadPem(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(StrCat(what, " ", path, ": ", std::strerror(errno)));
  std::string text(static_cast<size_t>(kMaxPemBytes) + 1, '\0');
  in.read(text.data(), kMaxPemBytes + 1);
  if (in.bad()) return absl::InvalidArgumentError(StrCat(what, " ", path, ": read failed"));
  if (in.gcount() > kMaxPemBytes) {
    return absl::InvalidArgumentError(StrCat(what, " ", path, ": larger than 1MiB, not a PEM file"));
  }
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

// The PEM text of a file-or-text pair, and how to name it in messages.
struct PemSource {
  std::string text;
  std::string name;
};

absl::StatusOr<PemSource> LoadPem(const std::string& file, const std::string& pem,
                                  std::string_view what) {
  if (file.empty()) return PemSource{pem, StrCat(what, " (PEM text)")};
  SWIFTLET_ASSIGN_OR_RETURN(std::string text, ReadPem(file, what));
  return PemSource{std::move(text), StrCat(what, " ", file)};
}

BioPtr MemoryBio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Every certificate in `pem`, in order; error if there is none.
absl::StatusOr<std::vector<X509Ptr>> ParseCertificates(const PemSource& source) {
  if (source.text.size() > static_cast<size_t>(kMaxPemBytes)) {
    return absl::InvalidArgumentError(StrCat(source.name, ": larger than 1MiB"));
  }
  BioPtr bio = MemoryBio(source.text);
  if (!bio) return absl::ResourceExhaustedError("out of memory reading PEM");
  std::vector<X509Ptr> certs;
  ERR_clear_error();
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, NoPassword, nullptr)) {
    certs.emplace_back(cert);
  }
  // The loop ends at the end of the text (no start line) or at a bad block.
  unsigned long err = ERR_peek_last_error();
  if (ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE) {
    ERR_clear_error();
  } else if (err != 0) {
    return absl::InvalidArgumentError(
        StrCat(source.name, ": bad certificate #", certs.size() + 1, ": ", TakeOpenSslError("")));
  }
  if (certs.empty()) {
    return absl::InvalidArgumentError(StrCat(source.name, ": no PEM certificate in it"));
  }
  return certs;
}

// TLS 1.2+, no compression, no renegotiation (see tls_options.h).
absl::Status Harden(SSL_CTX* ctx) {
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1) {
    return absl::InternalError(StrCat("TLS set-up: ", TakeOpenSslError("unknown error")));
  }
  uint64_t options = SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE;
#ifdef SSL_OP_NO_CLIENT_RENEGOTIATION
  options |= SSL_OP_NO_CLIENT_RENEGOTIATION;
#endif
  SSL_CTX_set_options(ctx, options);
  // Idle keep-alive connections give their read and write buffers (tens of
  // KiB each) back: thousands of them are normal for this server.
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  return absl::OkStatus();
}

bool IsIpAddress(const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  return !ec;
}

}  // namespace

absl::StatusOr<std::shared_ptr<SslContext>> MakeServerTlsContext(const TlsServerOptions& options) {
  if (!options.enabled()) return absl::InvalidArgumentError("TLS: no certificate given");
  if (options.key_file.empty() && options.key_pem.empty()) {
    return absl::InvalidArgumentError("TLS: a certificate needs its private key");
  }
  SWIFTLET_ASSIGN_OR_RETURN(PemSource cert_source,
                            LoadPem(options.cert_file, options.cert_pem, "TLS certificate"));
  SWIFTLET_ASSIGN_OR_RETURN(PemSource key_source,
                            LoadPem(options.key_file, options.key_pem, "TLS key"));
  SWIFTLET_ASSIGN_OR_RETURN(std::vector<X509Ptr> chain, ParseCertificates(cert_source));

  auto context = std::make_shared<SslContext>(SslContext::tls_server);
  SSL_CTX* ctx = context->native_handle();
  SWIFTLET_RETURN_IF_ERROR(Harden(ctx));
  ERR_clear_error();
  if (SSL_CTX_use_certificate(ctx, chain[0].get()) != 1) {
    return absl::InvalidArgumentError(
        StrCat(cert_source.name, ": ", TakeOpenSslError("the certificate was refused")));
  }
  for (size_t i = 1; i < chain.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(ctx, chain[i].get()) != 1) {
      return absl::InvalidArgumentError(
          StrCat(cert_source.name, ": chain certificate #", i + 1, ": ", TakeOpenSslError("refused")));
    }
  }

  if (key_source.text.size() > static_cast<size_t>(kMaxPemBytes)) {
    return absl::InvalidArgumentError(StrCat(key_source.name, ": larger than 1MiB"));
  }
  BioPtr bio = MemoryBio(key_source.text);
  if (!bio) return absl::ResourceExhaustedError("out of memory reading PEM");
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassword, nullptr));
  if (!key) {
    const bool encrypted = key_source.text.find("ENCRYPTED") != std::string::npos;
    return absl::InvalidArgumentError(StrCat(
        key_source.name, ": ",
        encrypted ? "the key is encrypted; give it unencrypted"
                  : StrCat("no usable PEM private key: ", TakeOpenSslError("none found"))));
  }
  if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    return absl::InvalidArgumentError(StrCat(key_source.name, " does not match ", cert_source.name,
                                             ": ", TakeOpenSslError("key mismatch")));
  }
  return context;
}

absl::StatusOr<std::shared_ptr<SslContext>> MakeClientTlsContext(const TlsClientOptions& options) {
  if (!options.use_tls) return std::shared_ptr<SslContext>();
  auto context = std::make_shared<SslContext>(SslContext::tls_client);
  SSL_CTX* ctx = context->native_handle();
  SWIFTLET_RETURN_IF_ERROR(Harden(ctx));
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (options.ca_file.empty() && options.ca_pem.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      return absl::InvalidArgumentError(
          StrCat("TLS: the system's certificate authorities: ", TakeOpenSslError("cannot load")));
    }
    return context;
  }
  SWIFTLET_ASSIGN_OR_RETURN(PemSource source, LoadPem(options.ca_file, options.ca_pem, "CA file"));
  SWIFTLET_ASSIGN_OR_RETURN(std::vector<X509Ptr> authorities, ParseCertificates(source));
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  for (const X509Ptr& cert : authorities) {
    if (X509_STORE_add_cert(store, cert.get()) != 1) {
      return absl::InvalidArgumentError(StrCat(source.name, ": ", TakeOpenSslError("refused")));
    }
  }
  return context;
}

absl::Status PrepareClientTls(TlsStream& stream, const std::string& name) {
  SSL* ssl = stream.native_handle();
  ERR_clear_error();
  if (IsIpAddress(name)) {
    // No SNI for addresses (RFC 6066 3); the certificate must list the IP.
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) != 1) {
      return absl::InvalidArgumentError(StrCat("TLS: bad address \"", name, "\""));
    }
    return absl::OkStatus();
  }
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (SSL_set1_host(ssl, name.c_str()) != 1 || SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) {
    return absl::InvalidArgumentError(
        StrCat("TLS: bad server name \"", name, "\": ", TakeOpenSslError("refused")));
  }
  return absl::OkStatus();
}

std::string TlsErrorText(TlsStream& stream, const boost::system::error_code& ec) {
  const long verify = SSL_get_verify_result(stream.native_handle());
  if (verify != X509_V_OK) {
    return StrCat("certificate verify failed: ", X509_verify_cert_error_string(verify));
  }
  return ec.message();
}

}  // namespace internal

absl::Status CheckTlsServerOptions(const TlsServerOptions& options) {
  return internal::MakeServerTlsContext(options).status();
}

absl::Status CheckTlsClientOptions(const TlsClientOptions& options) {
  return internal::MakeClientTlsContext(options).status();
}

}  // namespace swiftlet::http
