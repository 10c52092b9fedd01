#include "runtime/security/peer_check.h"

#include <openssl/x509_vfy.h>

#include "runtime/common/error.h"
#include "runtime/security/openssl_util.h"

namespace autodist::security {

using detail::Owned;

struct PeerCheck::Store {
  Owned<X509_STORE> store;
};

PeerCheck::PeerCheck(const std::string& ca_pem, const std::string& what)
    : store_(std::make_unique<Store>(Store{detail::TrustStore(ca_pem, what)})) {}
PeerCheck::~PeerCheck() = default;
PeerCheck::PeerCheck(PeerCheck&&) noexcept = default;
PeerCheck& PeerCheck::operator=(PeerCheck&&) noexcept = default;

std::string DescribeVerifyFailure(long code, const std::string& subject) {
  const std::string reason = X509_verify_cert_error_string(code);
  switch (code) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      return fmt::format(
          "the certificate of {} is not issued by this job's CA (another job's certificate, or "
          "one made elsewhere): {}",
          subject, reason);
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return fmt::format("the certificate of {} has expired: {}", subject, reason);
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return fmt::format("the certificate of {} is not valid yet (a clock behind?): {}", subject,
                         reason);
    default:
      return fmt::format("the certificate of {} was refused: {}", subject, reason);
  }
}

std::optional<std::string> PeerCheck::CheckChain(const std::string& chain_pem) const {
  std::vector<Owned<X509>> chain;
  try {
    chain = detail::ParseCertificates(chain_pem, "the peer's certificate");
  } catch (const Error& error) {
    return std::string(error.what());
  }
  Owned<X509_STORE_CTX> context(X509_STORE_CTX_new());
  STACK_OF(X509)* intermediates = sk_X509_new_null();
  for (size_t i = 1; i < chain.size(); ++i) sk_X509_push(intermediates, chain[i].get());
  X509_STORE_CTX_init(context.get(), store_->store.get(), chain.front().get(), intermediates);
  const bool passed = X509_verify_cert(context.get()) == 1;
  const long code = X509_STORE_CTX_get_error(context.get());
  sk_X509_free(intermediates);
  if (passed) return std::nullopt;
  return DescribeVerifyFailure(code, "'" + detail::CommonName(chain.front().get()) + "'");
}

}  // namespace autodist::security
