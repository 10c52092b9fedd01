#include "runtime/strategy/resource_spec.h"

#include <fmt/format.h>

#include <utility>

#include "runtime/common/error.h"
#include "runtime/strategy/resource_spec_rules.h"

namespace autodist::strategy {
namespace {

using detail::ValidateNodes;

std::vector<std::string> NodeCpuDevices(const NodeSpec& node) {
  std::vector<std::string> devices{CpuDevice(node.address, 0)};
  // As in AutoDist, further CPUs only become devices where there is no GPU to use instead.
  if (node.gpus.empty()) {
    for (int index : node.cpus) {
      if (index != 0) devices.push_back(CpuDevice(node.address, index));
    }
  }
  return devices;
}

// Errors about nodes built in code name what built them: "resource spec replica counts: ...".
config::ParseContext ContextFor(const std::string& source) {
  return config::ParseContext("resource spec " + source);
}

}  // namespace

ResourceSpec ResourceSpec::FromReplicaCounts(const ReplicaCounts& counts,
                                             const NodeAddressFn& address) {
  const config::ParseContext context = ContextFor("replica counts");
  auto check_at_least = [&](int value, int minimum, const char* field) {
    if (value < minimum) context.Fail(field, "expected at least {}, got {}", minimum, value);
  };
  check_at_least(counts.workers, 1, "resources.workers");
  check_at_least(counts.gpus_per_worker, 0, "resources.gpus_per_worker");
  check_at_least(counts.replicas_per_worker, 1, "resources.replicas_per_worker");
  check_at_least(counts.parameter_servers, 0, "resources.parameter_servers");

  const NodeAddressFn default_address = [](NodeRole role, int index) {
    return fmt::format("{}-{}", role == NodeRole::kParameterServer ? "ps" : "worker", index);
  };
  const NodeAddressFn& address_of = address ? address : default_address;
  // With dedicated PS nodes the workers stop hosting parameter servers; without them every
  // worker does both, as AutoDist's nodes do.
  const bool dedicated_ps = counts.parameter_servers > 0;

  std::vector<NodeSpec> nodes;
  for (int i = 0; i < counts.workers; ++i) {
    NodeSpec node;
    node.address = address_of(NodeRole::kWorker, i);
    const int cpus = counts.gpus_per_worker == 0 ? counts.replicas_per_worker : 1;
    for (int c = 0; c < cpus; ++c) node.cpus.push_back(c);
    for (int g = 0; g < counts.gpus_per_worker; ++g) node.gpus.push_back(g);
    node.chief = i == 0;
    node.role = dedicated_ps ? NodeRole::kWorker : NodeRole::kAny;
    nodes.push_back(std::move(node));
  }
  for (int j = 0; j < counts.parameter_servers; ++j) {
    NodeSpec node;
    node.address = address_of(NodeRole::kParameterServer, j);
    node.cpus = {0};
    node.role = NodeRole::kParameterServer;
    nodes.push_back(std::move(node));
  }
  for (NodeSpec& node : nodes) node.network_bandwidth = counts.network_bandwidth;
  ValidateNodes(nodes, context, /*check_loopback=*/false);
  ResourceSpec spec;
  spec.nodes_ = std::move(nodes);
  return spec;
}

ResourceSpec ResourceSpec::FromNodes(std::vector<NodeSpec> nodes, const std::string& source) {
  ValidateNodes(nodes, ContextFor(source), /*check_loopback=*/true);
  ResourceSpec spec;
  spec.nodes_ = std::move(nodes);
  return spec;
}

const std::string& ResourceSpec::chief_address() const {
  for (const NodeSpec& node : nodes_) {
    if (node.chief) return node.address;
  }
  Fail(ErrorCode::kFailedPrecondition, "resource spec has no nodes, hence no chief");
}

std::vector<std::string> ResourceSpec::CpuDevices() const {
  std::vector<std::string> devices;
  for (const NodeSpec& node : nodes_) {
    for (std::string& device : NodeCpuDevices(node)) devices.push_back(std::move(device));
  }
  return devices;
}

std::vector<std::string> ResourceSpec::GpuDevices() const {
  std::vector<std::string> devices;
  for (const NodeSpec& node : nodes_) {
    for (int index : node.gpus) devices.push_back(GpuDevice(node.address, index));
  }
  return devices;
}

std::vector<std::string> ResourceSpec::Replicas() const {
  std::vector<std::string> replicas;
  for (const NodeSpec& node : nodes_) {
    if (node.role == NodeRole::kParameterServer) continue;
    for (int index : node.gpus) replicas.push_back(GpuDevice(node.address, index));
  }
  for (const NodeSpec& node : nodes_) {
    if (node.role == NodeRole::kParameterServer || !node.gpus.empty()) continue;
    for (std::string& device : NodeCpuDevices(node)) replicas.push_back(std::move(device));
  }
  return replicas;
}

std::vector<std::string> ResourceSpec::PsCandidates() const {
  std::vector<std::string> candidates;
  for (const NodeSpec& node : nodes_) {
    if (node.role == NodeRole::kWorker) continue;
    for (std::string& device : NodeCpuDevices(node)) candidates.push_back(std::move(device));
  }
  return candidates;
}

int ResourceSpec::NumGpus() const {
  int count = 0;
  for (const NodeSpec& node : nodes_) count += static_cast<int>(node.gpus.size());
  return count;
}

std::string CpuDevice(const std::string& address, int index) {
  return fmt::format("{}:CPU:{}", address, index);
}

std::string GpuDevice(const std::string& address, int index) {
  return fmt::format("{}:GPU:{}", address, index);
}

}  // namespace autodist::strategy
