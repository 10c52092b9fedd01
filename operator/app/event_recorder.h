// Events on jobs, written as client-go's recorder writes them: a repeat of an Event already
// written (same job, type, reason and message) is not a new object but the old one with its
// count raised and lastTimestamp moved (a merge patch), so a condition that keeps recurring
// (a refused create the controller tries again, a restart after a restart) costs one Event
// in `kubectl describe`, with "x12 over 3m". Best effort: the status carries the truth, so a lost
// Event is logged, never retried.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "operator/kube/client.h"
#include "operator/reconcile/plan.h"

namespace autodist::app {

class EventRecorder {
 public:
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  // Remembers the last `capacity` distinct Events (client-go keeps 4096), forgetting the least
  // recently written first.
  explicit EventRecorder(kube::Client& client, size_t capacity = 4096, Clock clock = {});

  // Writes `event` on `job` (the job object: its apiVersion, kind and metadata).
  void Record(const nlohmann::json& job, const reconcile::Event& event);

  size_t remembered() const;

 private:
  struct Written {
    std::string ns;
    std::string name;  // the Event object's, as the server generated it
    int count = 0;
    std::list<std::string>::iterator recency;
  };
  // Creates the Event; returns its name ("" when the create failed).
  std::string Create(const nlohmann::json& job, const reconcile::Event& event,
                     const std::string& now);
  void Remember(const std::string& key, Written written);

  kube::Client& client_;
  size_t capacity_;
  Clock clock_;
  mutable std::mutex mutex_;
  std::map<std::string, Written> written_;  // job uid, type, reason, message -> Event
  std::list<std::string> recency_;          // keys, most recently written first
};

}  // namespace autodist::app
