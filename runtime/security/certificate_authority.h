// A job's certificate authority: a self-signed CA certificate whose key signs the certificate of
// every member of that job, and of nothing else. The operator makes one per AutoDistJob (kept in
// the job's Secret), `autodist run` one per run (kept in the run's directory until it ends).
//
// Keys are ECDSA P-256: a key is made in well under a millisecond, so a job of hundreds of
// members is issued its certificates in the time of one reconcile.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "runtime/security/job_credentials.h"

namespace autodist::security {

// The name every member certificate carries as a DNS subject alternative name besides its own,
// and the name clients verify a server against (gRPC's target name override): members reach
// each other by addresses that differ between clusters and runs, and the CA, which is the job's
// alone, is what proves membership.
inline constexpr char kMemberDnsName[] = "member.autodist.internal";

// When a certificate is valid. The start lies a little in the past, so that a node whose clock
// is behind the issuer's does not refuse a fresh certificate.
struct Validity {
  std::chrono::system_clock::time_point not_before;
  std::chrono::system_clock::time_point not_after;

  // From `now` minus 5 minutes for `lifetime`.
  static Validity For(std::chrono::seconds lifetime);
};

class CertificateAuthority {
 public:
  // A new CA named after `job` ("team-a/mnist": the subject's common name says which job it is).
  static CertificateAuthority Create(const std::string& job, const Validity& validity);
  // The CA of an existing job, from its certificate and key (a Secret's ca.crt and ca.key).
  // Throws InvalidArgument naming `where` when they do not parse or do not belong together.
  static CertificateAuthority FromPem(const std::string& certificate, const std::string& key,
                                      const std::string& where);

  ~CertificateAuthority();
  CertificateAuthority(CertificateAuthority&&) noexcept;
  CertificateAuthority& operator=(CertificateAuthority&&) noexcept;

  // A new key and a certificate for `member` (common name and DNS name `member`, and
  // kMemberDnsName), for both TLS server and client use.
  JobCredentials Issue(const std::string& member, const Validity& validity) const;

  const std::string& certificate() const { return certificate_pem_; }
  const std::string& key() const { return key_pem_; }

 private:
  struct Keys;
  CertificateAuthority(std::unique_ptr<Keys> keys, std::string certificate, std::string key);

  std::unique_ptr<Keys> keys_;
  std::string certificate_pem_;
  std::string key_pem_;
};

}  // namespace autodist::security
