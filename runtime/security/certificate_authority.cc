#include "runtime/security/certificate_authority.h"

#include <openssl/bn.h>
#include <openssl/x509v3.h>

#include <cstdint>

#include "runtime/common/error.h"
#include "runtime/security/openssl_util.h"

namespace autodist::security {
namespace {

using detail::Owned;
using detail::TakeOpenSslErrors;

Owned<EVP_PKEY> NewKey() {
  Owned<EVP_PKEY> key(EVP_EC_gen("P-256"));
  AD_CHECK(key != nullptr, kInternal, "cannot make an EC P-256 key: {}", TakeOpenSslErrors());
  return key;
}

void SetTime(ASN1_TIME* field, std::chrono::system_clock::time_point at) {
  ASN1_TIME_set(field, std::chrono::system_clock::to_time_t(at));
}

void SetRandomSerial(X509* cert) {
  // 127 random bits: unique across every certificate a job's CA signs, and positive as DER wants.
  BIGNUM* serial = BN_new();
  BN_rand(serial, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY);
  BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert));
  BN_free(serial);
}

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str());
  AD_CHECK(extension != nullptr, kInternal, "cannot make certificate extension '{}': {}", value,
           TakeOpenSslErrors());
  X509_add_ext(cert, extension, -1);
  X509_EXTENSION_free(extension);
}

// X.509's upper bound on a common name (RFC 5280, ub-common-name).
constexpr size_t kMaxCommonName = 64;

// `text` as a common name: itself when it fits, else its start and a digest of the whole, so
// that two long names stay apart. A job's name and namespace may each take 63 characters; the
// name is only a label (trust rests on the keys, identity on the SAN).
std::string CommonName(const std::string& text) {
  if (text.size() <= kMaxCommonName) return text;
  uint32_t hash = 2166136261U;  // FNV-1a
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619U;
  }
  const std::string digest = fmt::format("~{:08x}", hash);
  return text.substr(0, kMaxCommonName - digest.size()) + digest;
}

// A certificate for `subject` with `key`'s public half and `validity`, not yet signed.
Owned<X509> NewCertificate(const std::string& requested, EVP_PKEY* key, const Validity& validity) {
  const std::string subject = CommonName(requested);
  Owned<X509> cert(X509_new());
  X509_set_version(cert.get(), 2);  // v3: extensions
  SetRandomSerial(cert.get());
  SetTime(X509_getm_notBefore(cert.get()), validity.not_before);
  SetTime(X509_getm_notAfter(cert.get()), validity.not_after);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>("autodist"), -1, -1, 0);
  AD_CHECK(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                      reinterpret_cast<const unsigned char*>(subject.c_str()), -1,
                                      -1, 0) == 1,
           kInvalidArgument, "cannot name a certificate '{}': {}", subject, TakeOpenSslErrors());
  X509_set_pubkey(cert.get(), key);
  return cert;
}

void Sign(X509* cert, EVP_PKEY* key) {
  AD_CHECK(X509_sign(cert, key, EVP_sha256()) > 0, kInternal, "cannot sign a certificate: {}",
           TakeOpenSslErrors());
}

}  // namespace

Validity Validity::For(std::chrono::seconds lifetime) {
  const auto now = std::chrono::system_clock::now();
  return {now - std::chrono::minutes(5), now + lifetime};
}

struct CertificateAuthority::Keys {
  Owned<X509> certificate;
  Owned<EVP_PKEY> key;
};

CertificateAuthority::CertificateAuthority(std::unique_ptr<Keys> keys, std::string certificate,
                                           std::string key)
    : keys_(std::move(keys)), certificate_pem_(std::move(certificate)), key_pem_(std::move(key)) {}
CertificateAuthority::~CertificateAuthority() = default;
CertificateAuthority::CertificateAuthority(CertificateAuthority&&) noexcept = default;
CertificateAuthority& CertificateAuthority::operator=(CertificateAuthority&&) noexcept = default;

CertificateAuthority CertificateAuthority::Create(const std::string& job,
                                                  const Validity& validity) {
  auto keys = std::make_unique<Keys>();
  keys->key = NewKey();
  keys->certificate = NewCertificate("autodist job " + job + " CA", keys->key.get(), validity);
  X509* cert = keys->certificate.get();
  X509_set_issuer_name(cert, X509_get_subject_name(cert));
  AddExtension(cert, cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
  AddExtension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExtension(cert, cert, NID_subject_key_identifier, "hash");
  Sign(cert, keys->key.get());
  std::string certificate = detail::CertificatePem(cert);
  std::string key = detail::PrivateKeyPem(keys->key.get());
  return {std::move(keys), std::move(certificate), std::move(key)};
}

CertificateAuthority CertificateAuthority::FromPem(const std::string& certificate,
                                                   const std::string& key,
                                                   const std::string& where) {
  auto keys = std::make_unique<Keys>();
  keys->certificate = detail::ParseCertificate(certificate, where + ": the CA certificate");
  keys->key = detail::ParsePrivateKey(key, where + ": the CA key");
  AD_CHECK(X509_check_private_key(keys->certificate.get(), keys->key.get()) == 1, kInvalidArgument,
           "{}: the CA key is not the CA certificate's", where);
  return {std::move(keys), certificate, key};
}

JobCredentials CertificateAuthority::Issue(const std::string& member,
                                           const Validity& validity) const {
  AD_CHECK(!member.empty() && member.find_first_of(",/\\") == std::string::npos, kInvalidArgument,
           "a member name for a certificate must be non-empty, without ',', '/' or '\\', got '{}'",
           member);
  // The member's name is its certificate's common name, which peers read back as its identity:
  // it must fit whole. Members are a job's node names (worker-12, ps-3).
  AD_CHECK(member.size() <= kMaxCommonName, kInvalidArgument,
           "a member name for a certificate has at most {} characters (X.509's common name), got "
           "{}: '{}'",
           kMaxCommonName, member.size(), member);
  Owned<EVP_PKEY> key = NewKey();
  Owned<X509> cert = NewCertificate(member, key.get(), validity);
  X509* issuer = keys_->certificate.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer));
  AddExtension(cert.get(), issuer, NID_basic_constraints, "critical,CA:FALSE");
  AddExtension(cert.get(), issuer, NID_key_usage, "critical,digitalSignature");
  AddExtension(cert.get(), issuer, NID_ext_key_usage, "serverAuth,clientAuth");
  AddExtension(cert.get(), issuer, NID_subject_alt_name,
               fmt::format("DNS:{},DNS:{}", member, kMemberDnsName));
  AddExtension(cert.get(), issuer, NID_authority_key_identifier, "keyid:always");
  Sign(cert.get(), keys_->key.get());
  JobCredentials credentials;
  credentials.member = member;
  credentials.ca = certificate_pem_;
  credentials.certificate = detail::CertificatePem(cert.get());
  credentials.key = detail::PrivateKeyPem(key.get());
  credentials.not_after = validity.not_after;
  return credentials;
}

}  // namespace autodist::security
