#include "runtime/security/openssl_util.h"

#include <openssl/err.h>
#include <openssl/pem.h>

#include <array>

#include "runtime/common/error.h"

namespace autodist::security::detail {
namespace {

Owned<BIO> ReadBio(const std::string& text) {
  return Owned<BIO>(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return {data, static_cast<size_t>(size)};
}

}  // namespace

std::string TakeOpenSslErrors(const std::string& fallback) {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    std::array<char, 256> line{};
    ERR_error_string_n(code, line.data(), line.size());
    if (!text.empty()) text += "; ";
    text += line.data();
  }
  return text.empty() ? fallback : text;
}

std::vector<Owned<X509>> ParseCertificates(const std::string& pem, const std::string& what) {
  Owned<BIO> bio = ReadBio(pem);
  std::vector<Owned<X509>> certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert);
  }
  ERR_clear_error();  // the read past the last certificate queues "no start line"
  AD_CHECK(!certs.empty(), kInvalidArgument,
           "{}: expected a PEM certificate (-----BEGIN CERTIFICATE-----), found none", what);
  return certs;
}

Owned<X509> ParseCertificate(const std::string& pem, const std::string& what) {
  return std::move(ParseCertificates(pem, what).front());
}

Owned<EVP_PKEY> ParsePrivateKey(const std::string& pem, const std::string& what) {
  Owned<BIO> bio = ReadBio(pem);
  Owned<EVP_PKEY> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) {
    Fail(ErrorCode::kInvalidArgument, "{}: expected a PEM private key, found none ({})", what,
         TakeOpenSslErrors());
  }
  return key;
}

std::string CertificatePem(X509* cert) {
  Owned<BIO> bio(BIO_new(BIO_s_mem()));
  AD_CHECK(PEM_write_bio_X509(bio.get(), cert) == 1, kInternal, "cannot write a certificate: {}",
           TakeOpenSslErrors());
  return BioText(bio.get());
}

std::string PrivateKeyPem(EVP_PKEY* key) {
  Owned<BIO> bio(BIO_new(BIO_s_mem()));
  AD_CHECK(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
           kInternal, "cannot write a private key: {}", TakeOpenSslErrors());
  return BioText(bio.get());
}

Owned<X509_STORE> TrustStore(const std::string& ca_pem, const std::string& what) {
  Owned<X509_STORE> store(X509_STORE_new());
  for (Owned<X509>& cert : ParseCertificates(ca_pem, what)) {
    AD_CHECK(X509_STORE_add_cert(store.get(), cert.get()) == 1, kInvalidArgument,
             "{}: cannot trust its certificate: {}", what, TakeOpenSslErrors());
  }
  return store;
}

std::string CommonName(X509* cert) {
  X509_NAME* subject = X509_get_subject_name(cert);
  const int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (index < 0) return "";
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
  return {reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
          static_cast<size_t>(ASN1_STRING_length(data))};
}

}  // namespace autodist::security::detail
