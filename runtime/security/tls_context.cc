#include "runtime/security/tls_context.h"

#include <openssl/err.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "runtime/common/error.h"
#include "runtime/common/sigpipe.h"
#include "runtime/security/openssl_util.h"
#include "runtime/security/peer_check.h"

namespace autodist::security {

using detail::Owned;
using detail::TakeOpenSslErrors;

namespace {

// The common name of the certificate the last failed verification on this thread was about: a
// failed handshake keeps no peer certificate, and the refusal should name who was refused. The
// handshake runs on the calling thread, which the callback runs on too.
thread_local std::string refused_subject;

int RememberRefused(int preverify_ok, X509_STORE_CTX* context) {
  if (preverify_ok == 0) {
    X509* leaf = X509_STORE_CTX_get0_cert(context);
    refused_subject = leaf != nullptr ? "'" + detail::CommonName(leaf) + "'" : "the peer";
  }
  return preverify_ok;
}

}  // namespace

struct TlsContext::Context {
  Owned<SSL_CTX> ssl;
};

struct TlsSession::Ssl {
  Owned<SSL> ssl;
};

TlsSession::TlsSession(std::unique_ptr<Ssl> ssl, std::string peer_member)
    : ssl_(std::move(ssl)), peer_member_(std::move(peer_member)) {}

TlsSession::~TlsSession() = default;

ssize_t TlsSession::Result(int returned, const char* what) {
  if (returned > 0) return returned;
  const int error = SSL_get_error(ssl_->ssl.get(), returned);
  switch (error) {
    case SSL_ERROR_ZERO_RETURN:
      return 0;  // close_notify: the peer's end of the stream
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      // A blocking socket asks again only when its SO_RCVTIMEO / SO_SNDTIMEO passed.
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_SYSCALL:
      if (errno == 0) errno = ECONNRESET;
      ERR_clear_error();
      return -1;
    default:
      error_text_ = fmt::format("TLS {}: {}", what, TakeOpenSslErrors());
      errno = EPROTO;
      return -1;
  }
}

ssize_t TlsSession::Read(void* destination, size_t length) {
  errno = 0;
  size_t read = 0;
  const int returned = SSL_read_ex(ssl_->ssl.get(), destination, length, &read);
  return returned == 1 ? static_cast<ssize_t>(read) : Result(returned, "read");
}

ssize_t TlsSession::Write(const void* source, size_t length) {
  errno = 0;
  size_t written = 0;
  const int returned = SSL_write_ex(ssl_->ssl.get(), source, length, &written);
  return returned == 1 ? static_cast<ssize_t>(written) : Result(returned, "write");
}

void TlsSession::Close() {
  // One close_notify; waiting for the peer's would block on a peer that has gone.
  SSL_shutdown(ssl_->ssl.get());
  ERR_clear_error();
}

bool SpeaksNoTls(std::string_view openssl_errors) {
  // The record layer's complaints about bytes that are no TLS record: a version field that is
  // none of TLS's, an HTTP request line, or a "length" read from plain text.
  constexpr std::array<std::string_view, 3> kSigns = {"wrong version number", "http request",
                                                      "packet length too long"};
  return std::ranges::any_of(kSigns, [&](std::string_view sign) {
    return openssl_errors.find(sign) != std::string_view::npos;
  });
}

TlsContext::TlsContext(const JobCredentials& credentials, Side side)
    : context_(std::make_unique<Context>()), side_(side), member_(credentials.member) {
  IgnoreSigpipe();  // OpenSSL's socket writes are plain write(2)s
  context_->ssl.reset(
      SSL_CTX_new(side == Side::kClient ? TLS_client_method() : TLS_server_method()));
  SSL_CTX* ssl = context_->ssl.get();
  AD_CHECK(ssl != nullptr, kInternal, "cannot make a TLS context: {}", TakeOpenSslErrors());
  SSL_CTX_set_min_proto_version(ssl, TLS1_3_VERSION);
  SSL_CTX_set_ciphersuites(ssl, kDataCipherSuite);
  // A peer that closes its socket without close_notify ends the stream as a close does; frames
  // are length-prefixed, so a stream cut inside one is still an error (FrameSocket).
  SSL_CTX_set_options(ssl, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_TICKET);
  const std::string where = credentials.member.empty() ? "credentials" : credentials.member;
  const Owned<X509> cert =
      detail::ParseCertificate(credentials.certificate, where + " certificate");
  const Owned<EVP_PKEY> key = detail::ParsePrivateKey(credentials.key, where + " key");
  AD_CHECK(SSL_CTX_use_certificate(ssl, cert.get()) == 1 &&
               SSL_CTX_use_PrivateKey(ssl, key.get()) == 1 && SSL_CTX_check_private_key(ssl) == 1,
           kInvalidArgument, "{}: cannot use the certificate and key: {}", where,
           TakeOpenSslErrors());
  Owned<X509_STORE> store = detail::TrustStore(credentials.ca, where + " CA");
  SSL_CTX_set_cert_store(ssl, store.release());
  SSL_CTX_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, RememberRefused);
  SSL_CTX_set_verify_depth(ssl, 2);
}

TlsContext::~TlsContext() = default;

std::unique_ptr<TlsSession> TlsContext::Handshake(int fd, const std::string& peer) const {
  auto ssl = std::make_unique<TlsSession::Ssl>();
  ssl->ssl.reset(SSL_new(context_->ssl.get()));
  SSL* session = ssl->ssl.get();
  AD_CHECK(session != nullptr, kInternal, "cannot start a TLS session: {}", TakeOpenSslErrors());
  SSL_set_fd(session, fd);
  ERR_clear_error();
  refused_subject = "the peer";
  errno = 0;
  const int returned = side_ == Side::kClient ? SSL_connect(session) : SSL_accept(session);
  if (returned != 1) {
    const int error = SSL_get_error(session, returned);
    const int system_error = errno;
    const long verify = SSL_get_verify_result(session);
    std::string reason;
    if (verify != X509_V_OK) {
      reason = DescribeVerifyFailure(verify, refused_subject);
      ERR_clear_error();
    } else if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      reason = "the TLS handshake timed out";
    } else if (error == SSL_ERROR_SYSCALL) {
      reason = system_error == 0
                   ? "the peer closed the connection during the TLS handshake"
                   : fmt::format("the TLS handshake failed: {}", std::strerror(system_error));
    } else {
      const std::string detail = TakeOpenSslErrors();
      reason = SpeaksNoTls(detail) ? "the peer does not speak TLS (a plaintext client?): " + detail
                                   : "the TLS handshake failed: " + detail;
    }
    Fail(ErrorCode::kUnavailable, "{}: {}", peer, reason);
  }
  X509* presented = SSL_get0_peer_certificate(session);
  std::string member = presented ? detail::CommonName(presented) : "";
  return std::unique_ptr<TlsSession>(new TlsSession(std::move(ssl), std::move(member)));
}

}  // namespace autodist::security
