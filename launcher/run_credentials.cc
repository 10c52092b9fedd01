#include "launcher/run_credentials.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "runtime/common/error.h"
#include "runtime/security/certificate_authority.h"

namespace autodist::cli {
namespace {

namespace fs = std::filesystem;

// Longer than any local run: the CA and its keys are gone when the run ends anyway.
constexpr std::chrono::hours kLifetime{24 * 365};

std::string MakePrivateDirectory() {
  std::error_code error;
  fs::path base = fs::temp_directory_path(error);
  if (error) base = "/tmp";
  std::string pattern = (base / "autodist-run-XXXXXX").string();
  // mkdtemp makes it mode 0700 under a name no other process can have chosen.
  AD_CHECK(mkdtemp(pattern.data()) != nullptr, kInvalidArgument,
           "cannot make a private directory for the run's credentials under '{}': {}",
           base.string(), std::strerror(errno));
  return pattern;
}

}  // namespace

RunCredentials::RunCredentials(const std::string& job, const std::vector<std::string>& members)
    : root_(MakePrivateDirectory()) {
  try {
    const security::Validity validity = security::Validity::For(kLifetime);
    const security::CertificateAuthority authority =
        security::CertificateAuthority::Create("local/" + job, validity);
    for (const std::string& member : members) {
      security::WriteCredentials(DirectoryOf(member), authority.Issue(member, validity));
    }
    launcher_ = std::make_shared<const security::JobCredentials>(
        authority.Issue(kLauncherMember, validity));
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
    throw;
  }
}

RunCredentials::~RunCredentials() {
  std::error_code ignored;
  fs::remove_all(root_, ignored);
}

std::string RunCredentials::DirectoryOf(const std::string& member) const {
  return (fs::path(root_) / member).string();
}

}  // namespace autodist::cli
