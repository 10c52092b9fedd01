#include "tests/k8s/pod_logs.h"

#include <fstream>
#include <sstream>

namespace autodist::k8s {

void PodLogIndex::Set(const std::string& pod, const std::string& container,
                      const std::string& path) {
  std::lock_guard lock(mutex_);
  paths_[pod][container] = path;
}

void PodLogIndex::Erase(const std::string& pod) {
  std::lock_guard lock(mutex_);
  paths_.erase(pod);
}

std::optional<std::string> PodLogIndex::Read(const std::string& pod,
                                             const std::string& container) const {
  std::string path;
  {
    std::lock_guard lock(mutex_);
    auto p = paths_.find(pod);
    if (p == paths_.end()) return std::nullopt;
    auto c = p->second.find(container);
    if (c == p->second.end()) return std::nullopt;
    path = c->second;
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace autodist::k8s
