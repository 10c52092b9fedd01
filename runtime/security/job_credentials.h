// What a member of a job proves its membership with: the job's CA certificate, its own
// certificate (issued by that CA, naming the member) and its private key, as PEM text.
//
// On disk they are a directory with the file names of a Kubernetes TLS Secret: ca.crt, tls.crt,
// tls.key. The operator mounts such a directory into each pod (one per member, from the job's
// Secret); `autodist run` writes one per member of the run (docs/security.md).
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace autodist::security {

inline constexpr char kCaFile[] = "ca.crt";
inline constexpr char kCertificateFile[] = "tls.crt";
inline constexpr char kKeyFile[] = "tls.key";

struct JobCredentials {
  std::string member;       // the common name of `certificate`: "worker-0", "ps-1", "operator"
  std::string ca;           // the job's CA certificate, PEM
  std::string certificate;  // the member's certificate, PEM
  std::string key;          // the member's private key, PEM
  std::chrono::system_clock::time_point not_after;  // when `certificate` expires
};

// Checks `credentials` hang together, as a peer would check them: the key is the certificate's,
// and the CA issued the certificate, which is valid now. Throws InvalidArgument naming `where`
// (a directory, a Secret) and what is wrong ("certificate has expired", "not issued by ca.crt").
// Returns the credentials with `member` and `not_after` read from the certificate.
JobCredentials CheckedCredentials(JobCredentials credentials, const std::string& where);

// Reads and checks (CheckedCredentials) the credentials in `directory`. A missing file is
// NotFound naming it.
JobCredentials LoadCredentials(const std::string& directory);

// Writes `credentials` into `directory` (created, mode 0700); tls.key is written with mode 0600.
void WriteCredentials(const std::string& directory, const JobCredentials& credentials);

}  // namespace autodist::security
