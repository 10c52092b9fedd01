#include "operator/reconcile/names.h"

#include <fmt/format.h>

namespace autodist::reconcile {

const char* RoleLabel(Role role) { return role == Role::kWorker ? "worker" : "ps"; }

const char* RoleStatusKey(Role role) { return role == Role::kWorker ? "Worker" : "PS"; }

std::string ConfigMapName(const std::string& job) { return job + "-autodist"; }

std::string ServiceName(const std::string& job) { return job; }

std::string NetworkPolicyName(const std::string& job) { return job; }

std::string TlsSecretName(const std::string& job) { return job + "-tls"; }

std::string PodGroupName(const std::string& job) { return job; }

std::string NodeName(Role role, int index) { return fmt::format("{}-{}", RoleLabel(role), index); }

std::string PodName(const std::string& job, Role role, int index, int generation) {
  if (generation == 0) return fmt::format("{}-{}", job, NodeName(role, index));
  return fmt::format("{}-{}-r{}", job, NodeName(role, index), generation);
}

}  // namespace autodist::reconcile
