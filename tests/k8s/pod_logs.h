// Where the node agent's containers log, by pod and container: what GET pods/<name>/log reads.
// Shared with the API server's handler, which may run on an HTTP thread while the agent goes
// away, hence its own lock (and shared ownership by its users).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace autodist::k8s {

class PodLogIndex {
 public:
  // `pod` is "namespace/name".
  void Set(const std::string& pod, const std::string& container, const std::string& path);
  void Erase(const std::string& pod);
  // The whole log; nullopt when the container has not started (or the pod is gone).
  std::optional<std::string> Read(const std::string& pod, const std::string& container) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::map<std::string, std::string>> paths_;  // pod -> container -> file
};

}  // namespace autodist::k8s
