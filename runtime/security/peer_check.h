// The check every server and client of a job makes of its peer: the peer's certificate chains to
// the job's CA and is valid now. The CA is the job's own, so passing the check proves the peer
// belongs to the job; a certificate of another job, a self-made one or an expired one fails it.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace autodist::security {

class PeerCheck {
 public:
  // `ca_pem`: the job's CA certificate; `what` names it in errors (a file, a Secret key).
  // Throws InvalidArgument when it holds no certificate.
  PeerCheck(const std::string& ca_pem, const std::string& what);
  ~PeerCheck();
  PeerCheck(PeerCheck&&) noexcept;
  PeerCheck& operator=(PeerCheck&&) noexcept;

  // nullopt when `chain_pem` (the peer's certificate first, then any intermediates) passes;
  // otherwise why not, in words ("certificate has expired (its notAfter is ...)", "not issued
  // by this job's CA: ...").
  std::optional<std::string> CheckChain(const std::string& chain_pem) const;

 private:
  struct Store;
  std::unique_ptr<Store> store_;
};

// OpenSSL's X509_V_ERR_* code of a failed verification in words, with what it means for a job:
// an unknown issuer is "not issued by this job's CA (another job's certificate, or a self-made
// one)". `subject` names the certificate ("'worker-0'").
std::string DescribeVerifyFailure(long code, const std::string& subject);

}  // namespace autodist::security
