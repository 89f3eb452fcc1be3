// TLS for https targets: OpenSSL driven directly on the probe's socket (no
// BIO pair, no event loop), so the handshake's time is the link's round
// trips plus the two ends' crypto and nothing else. The socket is
// non-blocking only so each step can be bounded by the attempt's deadline:
// OpenSSL's WANT_READ / WANT_WRITE become a poll() for that event.
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "core/str_cat.h"
#include "http/tls_options.h"
#include "probe/tcp_transport.h"

namespace swiftlet::probe {

class TlsContext {
 public:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  ~TlsContext() { SSL_CTX_free(ctx_); }
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }

 private:
  SSL_CTX* const ctx_;
};

namespace {

// The policy of http/tls_options.h, so the probe negotiates what swiftlet's
// own clients would: for TLS 1.2 only ECDHE with AEAD ciphers.
constexpr char kTls12Ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

struct SslFree {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};
using SslPtr = std::unique_ptr<SSL, SslFree>;

// OpenSSL's queued errors as one line (and the queue emptied), or
// `fallback` when it holds none.
std::string TakeErrors(std::string_view fallback) {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? std::string(fallback) : out;
}

bool IsIpAddress(const std::string& host) {
  unsigned char addr[16];
  return inet_pton(AF_INET, host.c_str(), addr) == 1 || inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

// After an SSL_* call on a non-blocking socket returned `rc` <= 0: OK when
// the socket became ready for what OpenSSL wants (call again), else an
// error naming `what`. `eof` is set, with OK, when the peer closed.
absl::Status Retry(SSL* ssl, int rc, int fd, int64_t deadline_ns, const char* what, bool* eof) {
  switch (SSL_get_error(ssl, rc)) {
    case SSL_ERROR_WANT_READ: return WaitFor(fd, POLLIN, deadline_ns, what);
    case SSL_ERROR_WANT_WRITE: return WaitFor(fd, POLLOUT, deadline_ns, what);
    case SSL_ERROR_ZERO_RETURN:
      if (eof != nullptr) {
        *eof = true;
        return absl::OkStatus();
      }
      return absl::UnavailableError(StrCat(what, ": the peer closed the TLS session"));
    case SSL_ERROR_SYSCALL:
      if (errno == 0 && eof != nullptr) {
        *eof = true;
        return absl::OkStatus();
      }
      return absl::UnavailableError(
          StrCat(what, ": ", errno != 0 ? std::string(std::strerror(errno)) : "the peer closed the connection"));
    default: return absl::UnavailableError(StrCat(what, ": ", TakeErrors("TLS error")));
  }
}

// SIGPIPE held off this thread while it has a TLS session: OpenSSL's
// socket BIO writes with write(2), which raises SIGPIPE (deadly by default)
// when the server has reset the connection; blocked, the write fails with
// EPIPE and the attempt counts as lost. What the session raised is taken
// off the thread before the old mask comes back. Nested use is a no-op.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old_);
  }
  ~SigpipeBlock() {
    if (sigismember(&old_, SIGPIPE) == 1) return;
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe, nullptr, &zero) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t old_;
};

class TlsTransport final : public Transport {
 public:
  TlsTransport(std::unique_ptr<TcpTransport> tcp, SslPtr ssl) : tcp_(std::move(tcp)), ssl_(std::move(ssl)) {}
  ~TlsTransport() override {
    if (!established_) return;
    // A close_notify, best effort (one non-blocking try): the server sees
    // an orderly end rather than a truncation.
    ERR_clear_error();
    SSL_shutdown(ssl_.get());
    ERR_clear_error();
  }

  // The client handshake; see StartTls.
  absl::Status Handshake(const std::string& url, int64_t deadline_ns, int64_t* handshake_ns) {
    SSL* ssl = ssl_.get();
    const int64_t start = NowNs();
    while (true) {
      ERR_clear_error();
      errno = 0;
      const int rc = SSL_connect(ssl);
      if (rc == 1) break;
      const int error = SSL_get_error(ssl, rc);
      if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
        SWIFTLET_RETURN_IF_ERROR(
            WaitFor(tcp_->fd(), error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline_ns, "TLS handshake"));
        continue;
      }
      const long verify = SSL_get_verify_result(ssl);
      if (verify != X509_V_OK) {
        ERR_clear_error();
        return absl::UnavailableError(StrCat("TLS handshake with ", url, ": certificate verify failed: ",
                                             X509_verify_cert_error_string(verify)));
      }
      const bool io = error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0;
      const std::string why = !io             ? TakeErrors("TLS error")
                              : errno != 0    ? std::string(std::strerror(errno))
                                              : std::string("the server closed the connection");
      ERR_clear_error();
      return absl::UnavailableError(StrCat("TLS handshake with ", url, ": ", why));
    }
    if (handshake_ns != nullptr) *handshake_ns = NowNs() - start;
    established_ = true;
    return absl::OkStatus();
  }

  absl::Status Write(std::string_view data, int64_t deadline_ns) override {
    while (!data.empty()) {
      ERR_clear_error();
      errno = 0;
      const int n = SSL_write(ssl_.get(), data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      SWIFTLET_RETURN_IF_ERROR(Retry(ssl_.get(), n, tcp_->fd(), deadline_ns, "send", nullptr));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<size_t> Read(char* buffer, size_t max, int64_t deadline_ns) override {
    while (true) {
      ERR_clear_error();
      errno = 0;
      const int n = SSL_read(ssl_.get(), buffer, static_cast<int>(std::min<size_t>(max, 1 << 30)));
      if (n > 0) return static_cast<size_t>(n);
      bool eof = false;
      SWIFTLET_RETURN_IF_ERROR(Retry(ssl_.get(), n, tcp_->fd(), deadline_ns, "receive", &eof));
      if (eof) return 0;
    }
  }

 private:
  // Destroyed in reverse order: the session, then the socket under it,
  // then the signal mask.
  SigpipeBlock sigpipe_;
  std::unique_ptr<TcpTransport> tcp_;
  SslPtr ssl_;
  bool established_ = false;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const TlsContext>> MakeTlsContext(const std::string& ca_file) {
  if (!ca_file.empty()) {
    // http/'s check reads the file bounded and says what is wrong with it
    // (unreadable, no certificate, a bad block) better than OpenSSL would.
    http::TlsClientOptions check;
    check.use_tls = true;
    check.ca_file = ca_file;
    SWIFTLET_RETURN_IF_ERROR(http::CheckTlsClientOptions(check));
  }
  ERR_clear_error();
  SSL_CTX* raw = SSL_CTX_new(TLS_client_method());
  if (raw == nullptr) return absl::InternalError(StrCat("TLS set-up: ", TakeErrors("out of memory")));
  auto context = std::make_shared<const TlsContext>(raw);
  SSL_CTX* ctx = context->get();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 || SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1) {
    return absl::InternalError(StrCat("TLS set-up: ", TakeErrors("unknown error")));
  }
  uint64_t options = SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION;
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
  // A server that closes without close_notify after a Connection: close
  // answer: the end of the body, not an error (HttpExchange checks the
  // body's framing, so a truncated answer still fails).
  options |= SSL_OP_IGNORE_UNEXPECTED_EOF;
#endif
  SSL_CTX_set_options(ctx, options);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  const int loaded = ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx)
                                     : SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
  if (loaded != 1) {
    return absl::InvalidArgumentError(StrCat(ca_file.empty() ? "the system's certificate authorities" : ca_file,
                                             ": ", TakeErrors("cannot load")));
  }
  return context;
}

absl::StatusOr<std::unique_ptr<Transport>> StartTls(std::unique_ptr<TcpTransport> tcp, const TlsContext& tls,
                                                    const std::string& host, const std::string& url,
                                                    int64_t deadline_ns, int64_t* handshake_ns) {
  ERR_clear_error();
  SslPtr ssl(SSL_new(tls.get()));
  if (ssl == nullptr || SSL_set_fd(ssl.get(), tcp->fd()) != 1) {
    return absl::InternalError(StrCat("TLS set-up: ", TakeErrors("out of memory")));
  }
  if (IsIpAddress(host)) {
    // No SNI for addresses (RFC 6066 section 3): the certificate must list the IP.
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), host.c_str()) != 1) {
      return absl::InvalidArgumentError(StrCat("TLS: bad address \"", host, "\""));
    }
  } else {
    SSL_set_hostflags(ssl.get(), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (SSL_set1_host(ssl.get(), host.c_str()) != 1 || SSL_set_tlsext_host_name(ssl.get(), host.c_str()) != 1) {
      return absl::InvalidArgumentError(StrCat("TLS: bad server name \"", host, "\": ", TakeErrors("refused")));
    }
  }
  auto transport = std::make_unique<TlsTransport>(std::move(tcp), std::move(ssl));
  SWIFTLET_RETURN_IF_ERROR(transport->Handshake(url, deadline_ns, handshake_ns));
  return std::unique_ptr<Transport>(std::move(transport));
}

}  // namespace swiftlet::probe
