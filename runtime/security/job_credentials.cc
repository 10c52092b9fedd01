#include "runtime/security/job_credentials.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/security/openssl_util.h"
#include "runtime/security/peer_check.h"

namespace autodist::security {
namespace {

namespace fs = std::filesystem;
using detail::Owned;

std::chrono::system_clock::time_point NotAfter(X509* cert) {
  tm expiry{};
  ASN1_TIME_to_tm(X509_get0_notAfter(cert), &expiry);
  return std::chrono::system_clock::from_time_t(timegm(&expiry));
}

// Writes `bytes` to `path` created with `mode` (an existing file is replaced, and gets it too).
void WritePrivateFile(const fs::path& path, const std::string& bytes, mode_t mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  AD_CHECK(fd >= 0, kInvalidArgument, "cannot write '{}': {}", path.string(), std::strerror(errno));
  fchmod(fd, mode);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t wrote = write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      const int error = errno;
      close(fd);
      Fail(ErrorCode::kInvalidArgument, "cannot write '{}': {}", path.string(),
           std::strerror(error));
    }
    done += static_cast<size_t>(wrote);
  }
  close(fd);
}

}  // namespace

JobCredentials CheckedCredentials(JobCredentials credentials, const std::string& where) {
  const Owned<X509> cert =
      detail::ParseCertificate(credentials.certificate, where + "/" + kCertificateFile);
  const Owned<EVP_PKEY> key = detail::ParsePrivateKey(credentials.key, where + "/" + kKeyFile);
  AD_CHECK(X509_check_private_key(cert.get(), key.get()) == 1, kInvalidArgument,
           "{}: {} is not the private key of {}", where, kKeyFile, kCertificateFile);
  const PeerCheck check(credentials.ca, where + "/" + kCaFile);
  if (const std::optional<std::string> failure = check.CheckChain(credentials.certificate)) {
    Fail(ErrorCode::kInvalidArgument, "{}: {} fails its own job's check: {}", where,
         kCertificateFile, *failure);
  }
  credentials.member = detail::CommonName(cert.get());
  credentials.not_after = NotAfter(cert.get());
  return credentials;
}

JobCredentials LoadCredentials(const std::string& directory) {
  JobCredentials credentials;
  const fs::path root(directory);
  AD_CHECK(fs::is_directory(root), kNotFound,
           "credentials directory '{}' does not exist (expected {}, {} and {} in it)", directory,
           kCaFile, kCertificateFile, kKeyFile);
  credentials.ca = ReadFileBytes((root / kCaFile).string(), "the job's CA certificate");
  credentials.certificate =
      ReadFileBytes((root / kCertificateFile).string(), "the member's certificate");
  credentials.key = ReadFileBytes((root / kKeyFile).string(), "the member's private key");
  return CheckedCredentials(std::move(credentials), directory);
}

void WriteCredentials(const std::string& directory, const JobCredentials& credentials) {
  std::error_code error;
  fs::create_directories(directory, error);
  AD_CHECK(!error, kInvalidArgument, "cannot create credentials directory '{}': {}", directory,
           error.message());
  fs::permissions(directory, fs::perms::owner_all, fs::perm_options::replace, error);
  const fs::path root(directory);
  WritePrivateFile(root / kCaFile, credentials.ca, 0644);
  WritePrivateFile(root / kCertificateFile, credentials.certificate, 0644);
  WritePrivateFile(root / kKeyFile, credentials.key, 0600);
}

}  // namespace autodist::security
