// ResourceSpec: the machines and devices a job runs on, in AutoDist's resource_spec.yml format
// (`nodes: [{address, cpus, gpus, chief, network_bandwidth, ssh_config}]`, optional `ssh:`).
//
// Devices are named "<address>:CPU:<i>" and "<address>:GPU:<i>". Every node has CPU:0; further
// CPUs are devices only on GPU-less nodes. Replicas are every GPU in node order, then the CPUs of
// GPU-less nodes; parameter-server candidates are the CPU devices in node order.
//
// Extension over AutoDist: a node may carry `role: worker` or `role: ps`. A `ps` node hosts
// parameter servers only (no replicas); a `worker` node hosts replicas only (no parameter
// servers). Without a role (AutoDist's files) a node does both.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace autodist::strategy {

enum class NodeRole { kAny, kWorker, kParameterServer };

struct NodeSpec {
  std::string address;
  std::vector<int> cpus;                    // CPU indices as listed (CPU:0 is always present)
  std::vector<int> gpus;                    // GPU indices as listed
  bool chief = false;                       // after validation: exactly one node is chief
  std::optional<double> network_bandwidth;  // Gbit/s, informational
  std::string ssh_config;                   // accepted for AutoDist compatibility, unused
  NodeRole role = NodeRole::kAny;

  bool operator==(const NodeSpec&) const = default;
};

// Replica counts as a job manifest states them; FromReplicaCounts turns them into nodes.
struct ReplicaCounts {
  int workers = 1;
  int gpus_per_worker = 0;      // > 0: each worker contributes this many GPU replicas
  int replicas_per_worker = 1;  // CPU-only workers: this many CPU replicas each
  int parameter_servers = 0;    // dedicated PS nodes; 0: workers host the parameter servers
  std::optional<double> network_bandwidth;  // every node's, Gbit/s; none: unstated
};

// Gives the address of a node from its role and index, e.g. (kWorker, 0) -> "job-worker-0".
using NodeAddressFn = std::function<std::string(NodeRole role, int index)>;

class ResourceSpec {
 public:
  // Parses AutoDist's YAML; errors name `source` (the file) and the offending field.
  static ResourceSpec FromYamlFile(const std::string& path);
  static ResourceSpec FromYamlString(const std::string& text, const std::string& source);

  // Worker nodes (worker 0 is chief) followed by dedicated PS nodes. The default address
  // function yields "worker-<i>" and "ps-<i>".
  static ResourceSpec FromReplicaCounts(const ReplicaCounts& counts,
                                        const NodeAddressFn& address = nullptr);

  // Validates and builds from nodes: unique addresses, one chief (the only node by default,
  // otherwise exactly one marked), no loopback address when there are several nodes.
  static ResourceSpec FromNodes(std::vector<NodeSpec> nodes, const std::string& source);

  const std::vector<NodeSpec>& nodes() const { return nodes_; }
  const std::string& chief_address() const;

  std::vector<std::string> CpuDevices() const;    // every CPU device, node order
  std::vector<std::string> GpuDevices() const;    // every GPU device, node order
  std::vector<std::string> Replicas() const;      // data-parallel replicas
  std::vector<std::string> PsCandidates() const;  // parameter-server devices
  int NumGpus() const;

  // Serializes back to the YAML format (with roles when set).
  std::string ToYaml() const;

 private:
  std::vector<NodeSpec> nodes_;
};

// "<address>:CPU:<index>" / "<address>:GPU:<index>".
std::string CpuDevice(const std::string& address, int index);
std::string GpuDevice(const std::string& address, int index);

}  // namespace autodist::strategy
