// A running job's training progress, read from its coordinator (the chief's Status RPC, the
// same one `autodist run` shows its progress line from), for status.progress.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "operator/reconcile/progress.h"
#include "runtime/security/job_credentials.h"

namespace autodist::coordinator {
class CoordinatorClient;
}

namespace autodist::app {

class ProgressReader {
 public:
  ProgressReader();
  ~ProgressReader();

  // The progress at `coordinator` (host:port), or nullopt when it cannot be reached within
  // `timeout` (the chief may not serve yet; the next reconcile tries again). Thread-safe.
  std::optional<reconcile::Progress> Read(const std::string& coordinator,
                                          std::chrono::milliseconds timeout);

  // The job credentials to read `coordinator` with (the operator's certificate of that job,
  // tls_secret.h); nullptr: plaintext. A change replaces the connection.
  void UseCredentials(const std::string& coordinator,
                      std::shared_ptr<const security::JobCredentials> credentials);

  // Drops the connection to `coordinator` and its credentials (its job finished or was deleted).
  void Forget(const std::string& coordinator);

 private:
  std::shared_ptr<coordinator::CoordinatorClient> ClientFor(const std::string& coordinator);
  void DropClient(const std::string& coordinator);

  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<coordinator::CoordinatorClient>> clients_;
  std::map<std::string, std::shared_ptr<const security::JobCredentials>> credentials_;
};

}  // namespace autodist::app
