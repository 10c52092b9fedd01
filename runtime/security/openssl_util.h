// OpenSSL objects as owning pointers, PEM in and out of strings, and OpenSSL's error queue as
// text. Internal to runtime/security.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <vector>

namespace autodist::security::detail {

struct OpenSslFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
  void operator()(X509* cert) const { X509_free(cert); }
  void operator()(X509_STORE* store) const { X509_STORE_free(store); }
  void operator()(X509_STORE_CTX* context) const { X509_STORE_CTX_free(context); }
  void operator()(SSL_CTX* context) const { SSL_CTX_free(context); }
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};
template <typename T>
using Owned = std::unique_ptr<T, OpenSslFree>;

// OpenSSL's queued errors of this thread, "; "-joined (and the queue cleared); `fallback` when
// the queue is empty.
std::string TakeOpenSslErrors(const std::string& fallback = "no detail from OpenSSL");

// Parsing PEM; throw InvalidArgument naming `what` (a file, a Secret key) when the text holds
// no such object.
Owned<X509> ParseCertificate(const std::string& pem, const std::string& what);
std::vector<Owned<X509>> ParseCertificates(const std::string& pem, const std::string& what);
Owned<EVP_PKEY> ParsePrivateKey(const std::string& pem, const std::string& what);

std::string CertificatePem(X509* cert);
std::string PrivateKeyPem(EVP_PKEY* key);

// A store trusting exactly the certificates of `ca_pem`.
Owned<X509_STORE> TrustStore(const std::string& ca_pem, const std::string& what);

// The certificate's subject common name ("" when it has none).
std::string CommonName(X509* cert);

}  // namespace autodist::security::detail
