#include "operator/app/progress_reader.h"

#include "runtime/common/error.h"
#include "runtime/coordinator/client.h"

namespace autodist::app {

ProgressReader::ProgressReader() = default;
ProgressReader::~ProgressReader() = default;

std::shared_ptr<coordinator::CoordinatorClient> ProgressReader::ClientFor(
    const std::string& coordinator) {
  std::lock_guard lock(mutex_);
  auto& client = clients_[coordinator];
  if (!client) {
    coordinator::CoordinatorClientOptions options;
    const auto found = credentials_.find(coordinator);
    options.credentials = found != credentials_.end() ? found->second : nullptr;
    client = std::make_shared<coordinator::CoordinatorClient>(coordinator, options);
  }
  return client;
}

void ProgressReader::UseCredentials(const std::string& coordinator,
                                    std::shared_ptr<const security::JobCredentials> credentials) {
  std::lock_guard lock(mutex_);
  auto& current = credentials_[coordinator];
  if (current == credentials) return;
  current = std::move(credentials);
  clients_.erase(coordinator);
}

void ProgressReader::DropClient(const std::string& coordinator) {
  std::lock_guard lock(mutex_);
  clients_.erase(coordinator);
}

void ProgressReader::Forget(const std::string& coordinator) {
  std::lock_guard lock(mutex_);
  clients_.erase(coordinator);
  credentials_.erase(coordinator);
}

std::optional<reconcile::Progress> ProgressReader::Read(const std::string& coordinator,
                                                        std::chrono::milliseconds timeout) {
  try {
    const coordinator::StatusSnapshot snapshot = ClientFor(coordinator)->Status(timeout);
    reconcile::Progress progress;
    progress.step = snapshot.step;
    if (snapshot.total_steps > 0) progress.total_steps = snapshot.total_steps;
    progress.loss = snapshot.loss;
    if (snapshot.samples_per_second > 0) progress.samples_per_second = snapshot.samples_per_second;
    progress.resumed_from_step = snapshot.resumed_from_step;
    return progress;
  } catch (const Error&) {
    // A channel whose first attempts found nothing listening stays in TRANSIENT_FAILURE, where
    // gRPC fails calls at once while its reconnect attempts back off (on a busy node they kept
    // failing for seconds after the coordinator listened): the next read starts afresh.
    DropClient(coordinator);
    return std::nullopt;  // not serving yet, or gone: the pods' phases tell the rest
  }
}

}  // namespace autodist::app
