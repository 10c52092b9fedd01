// The ephemeral identity of one `autodist run`: a CA made for the run alone, a certificate for
// each member and one for the launcher (which reads the progress from the coordinator), written
// to a private directory (mode 0700, keys 0600) under the system's temporary directory and
// removed when the run ends. Local jobs are thus authenticated as cluster jobs are, even on
// loopback: another user's process on the machine cannot join, push or abort (docs/security.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launcher/private_directory.h"
#include "runtime/security/job_credentials.h"

namespace autodist::cli {

// The launcher's own member name in the run's CA.
inline constexpr char kLauncherMember[] = "launcher";

class RunCredentials {
 public:
  // Makes the CA for job `job` and credentials for each of `members` and for the launcher.
  // Throws InvalidArgument when the directory cannot be made.
  RunCredentials(const std::string& job, const std::vector<std::string>& members);

  // The directory autodist-runtime's --tls-dir takes for `member`.
  std::string DirectoryOf(const std::string& member) const;
  const std::shared_ptr<const security::JobCredentials>& launcher() const { return launcher_; }

 private:
  launcher::PrivateDirectory root_;  // removed, credentials and all, with the object
  std::shared_ptr<const security::JobCredentials> launcher_;
};

}  // namespace autodist::cli
