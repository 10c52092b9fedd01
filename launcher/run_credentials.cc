#include "launcher/run_credentials.h"

#include <chrono>
#include <filesystem>

#include "runtime/common/error.h"
#include "runtime/security/certificate_authority.h"

namespace autodist::cli {
namespace {

namespace fs = std::filesystem;

// Longer than any local run: the CA and its keys are gone when the run ends anyway.
constexpr std::chrono::hours kLifetime{24 * 365};

}  // namespace

// A constructor that throws still removes the directory: root_ is already made.
RunCredentials::RunCredentials(const std::string& job, const std::vector<std::string>& members)
    : root_("autodist-run", "the run's credentials") {
  const security::Validity validity = security::Validity::For(kLifetime);
  const security::CertificateAuthority authority =
      security::CertificateAuthority::Create("local/" + job, validity);
  for (const std::string& member : members) {
    security::WriteCredentials(DirectoryOf(member), authority.Issue(member, validity));
  }
  launcher_ =
      std::make_shared<const security::JobCredentials>(authority.Issue(kLauncherMember, validity));
}

std::string RunCredentials::DirectoryOf(const std::string& member) const {
  return (fs::path(root_.path()) / member).string();
}

}  // namespace autodist::cli
