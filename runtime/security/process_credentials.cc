#include "runtime/security/process_credentials.h"

#include <mutex>

namespace autodist::security {
namespace {

std::mutex& Mutex() {
  static std::mutex mutex;
  return mutex;
}

std::shared_ptr<const JobCredentials>& Current() {
  static std::shared_ptr<const JobCredentials> credentials;
  return credentials;
}

}  // namespace

void SetProcessCredentials(std::shared_ptr<const JobCredentials> credentials) {
  std::lock_guard lock(Mutex());
  Current() = std::move(credentials);
}

std::shared_ptr<const JobCredentials> ProcessCredentials() {
  std::lock_guard lock(Mutex());
  return Current();
}

}  // namespace autodist::security
