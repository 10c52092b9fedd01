#include "runtime/strategy/resource_spec.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <map>
#include <set>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::strategy {
namespace {

constexpr const char* kNodeKeys = "address, cpus, gpus, chief, network_bandwidth, ssh_config, role";

// Every error has the same shape so that a user can find the file and the field it is about.
template <typename... Args>
[[noreturn]] void FailAt(const std::string& source, const std::string& path,
                         fmt::format_string<Args...> format, Args&&... args) {
  Fail(ErrorCode::kInvalidArgument, "resource spec '{}': {}: {}", source, path,
       fmt::format(format, std::forward<Args>(args)...));
}

std::string NodePath(std::size_t index) { return fmt::format("nodes[{}]", index); }

const char* RoleName(NodeRole role) {
  switch (role) {
    case NodeRole::kWorker:
      return "worker";
    case NodeRole::kParameterServer:
      return "ps";
    case NodeRole::kAny:
      break;
  }
  return "any";
}

// Matches what AutoDist refuses for multi-node specs: the name localhost and the IPv4/IPv6
// loopback ranges. inet_pton accepts every spelling of ::1 (e.g. 0:0:0:0:0:0:0:1).
bool IsLoopbackAddress(const std::string& address) {
  std::string lower = address;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, address.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

// Sorts and deduplicates device indices as AutoDist does (it iterates over a set), after
// checking that each is a valid index.
void NormalizeIndices(std::vector<int>& indices, const std::string& source,
                      const std::string& path) {
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0) {
      FailAt(source, fmt::format("{}[{}]", path, i), "expected a non-negative integer, got {}",
             indices[i]);
    }
  }
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
}

// The rules shared by files, code-built nodes and replica counts. Replica counts name pods, not
// machines, so they skip the loopback rule (`check_loopback` false).
void Validate(std::vector<NodeSpec>& nodes, const std::string& source, bool check_loopback) {
  if (nodes.empty()) FailAt(source, "nodes", "expected at least one node, got an empty list");

  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    NodeSpec& node = nodes[i];
    const std::string path = NodePath(i);
    if (node.address.empty()) FailAt(source, path + ".address", "must not be empty");
    // Device names are "<address>:<type>:<index>"; whitespace would make them unreadable.
    if (std::any_of(node.address.begin(), node.address.end(),
                    [](unsigned char c) { return std::isspace(c) != 0 || std::iscntrl(c) != 0; })) {
      FailAt(source, path + ".address", "must not contain whitespace, got '{}'", node.address);
    }
    const auto [previous, inserted] = seen.emplace(node.address, i);
    if (!inserted) {
      FailAt(source, path + ".address", "duplicate address '{}' (also {})", node.address,
             NodePath(previous->second));
    }
    if (check_loopback && nodes.size() > 1 && IsLoopbackAddress(node.address)) {
      FailAt(source, path + ".address",
             "loopback address '{}' cannot be used when there are several nodes; use an address "
             "the other nodes can reach",
             node.address);
    }
    NormalizeIndices(node.cpus, source, path + ".cpus");
    NormalizeIndices(node.gpus, source, path + ".gpus");
    if (node.network_bandwidth.has_value()) {
      const double bandwidth = *node.network_bandwidth;
      if (!std::isfinite(bandwidth) || bandwidth <= 0) {
        FailAt(source, path + ".network_bandwidth", "expected a positive number of Gbit/s, got {}",
               bandwidth);
      }
    }
  }

  if (nodes.size() == 1) {
    // AutoDist makes a lone node the chief whatever its flag says.
    nodes.front().chief = true;
  } else {
    std::vector<std::size_t> chiefs;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].chief) chiefs.push_back(i);
    }
    if (chiefs.empty()) FailAt(source, "nodes", "several nodes and none is marked chief: true");
    if (chiefs.size() > 1) {
      FailAt(source, NodePath(chiefs[1]) + ".chief",
             "nodes '{}' and '{}' are both marked chief: true; exactly one node may be",
             nodes[chiefs[0]].address, nodes[chiefs[1]].address);
    }
  }

  // Without a node that may host replicas there is nothing to train on.
  if (std::all_of(nodes.begin(), nodes.end(),
                  [](const NodeSpec& n) { return n.role == NodeRole::kParameterServer; })) {
    FailAt(source, "nodes", "every node has role ps; at least one node must host replicas");
  }
}

// ---- YAML reading -------------------------------------------------------------------------

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return fmt::format("'{}'", node.Scalar());
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return "an empty value";
}

std::string JoinPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// The entries of a mapping in file order. yaml-cpp keeps repeated keys and a lookup would
// silently pick one of them, so a repeated key is an error here.
std::vector<std::pair<std::string, YAML::Node>> MapEntries(const YAML::Node& map,
                                                           const std::string& source,
                                                           const std::string& path) {
  std::vector<std::pair<std::string, YAML::Node>> entries;
  std::set<std::string> keys;
  for (const auto& entry : map) {
    if (!entry.first.IsScalar()) {
      FailAt(source, path.empty() ? "top level" : path, "keys must be strings, got {}",
             Describe(entry.first));
    }
    const std::string& key = entry.first.Scalar();
    if (!keys.insert(key).second) FailAt(source, JoinPath(path, key), "key appears twice");
    entries.emplace_back(key, entry.second);
  }
  return entries;
}

std::string ReadString(const YAML::Node& value, const std::string& source,
                       const std::string& path) {
  if (!value.IsScalar()) FailAt(source, path, "expected a string, got {}", Describe(value));
  return value.Scalar();
}

std::vector<int> ReadIndices(const YAML::Node& value, const std::string& source,
                             const std::string& path) {
  if (!value.IsSequence()) {
    FailAt(source, path, "expected a list of non-negative integers, got {}", Describe(value));
  }
  std::vector<int> indices;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const YAML::Node item = value[i];
    int index = 0;
    if (!item.IsScalar() || !YAML::convert<int>::decode(item, index)) {
      FailAt(source, fmt::format("{}[{}]", path, i), "expected a non-negative integer, got {}",
             Describe(item));
    }
    indices.push_back(index);  // the sign is checked with the other validation rules
  }
  return indices;
}

bool ReadBool(const YAML::Node& value, const std::string& source, const std::string& path) {
  bool flag = false;
  if (!value.IsScalar() || !YAML::convert<bool>::decode(value, flag)) {
    FailAt(source, path, "expected true or false, got {}", Describe(value));
  }
  return flag;
}

double ReadNumber(const YAML::Node& value, const std::string& source, const std::string& path) {
  double number = 0;
  if (!value.IsScalar() || !YAML::convert<double>::decode(value, number)) {
    FailAt(source, path, "expected a number, got {}", Describe(value));
  }
  return number;
}

NodeRole ReadRole(const YAML::Node& value, const std::string& source, const std::string& path) {
  if (value.IsScalar() && value.Scalar() == "worker") return NodeRole::kWorker;
  if (value.IsScalar() && value.Scalar() == "ps") return NodeRole::kParameterServer;
  FailAt(source, path, "expected 'worker' or 'ps', got {}", Describe(value));
}

NodeSpec ReadNode(const YAML::Node& yaml, const std::string& source, const std::string& path) {
  if (!yaml.IsMap()) {
    FailAt(source, path, "expected a mapping with an 'address', got {}", Describe(yaml));
  }
  NodeSpec node;
  bool has_address = false;
  for (const auto& [key, value] : MapEntries(yaml, source, path)) {
    const std::string field = JoinPath(path, key);
    if (key == "address") {
      node.address = ReadString(value, source, field);
      has_address = true;
    } else if (key == "cpus") {
      node.cpus = ReadIndices(value, source, field);
    } else if (key == "gpus") {
      node.gpus = ReadIndices(value, source, field);
    } else if (key == "chief") {
      node.chief = ReadBool(value, source, field);
    } else if (key == "network_bandwidth") {
      node.network_bandwidth = ReadNumber(value, source, field);
    } else if (key == "ssh_config") {
      node.ssh_config = ReadString(value, source, field);
    } else if (key == "role") {
      node.role = ReadRole(value, source, field);
    } else {
      FailAt(source, field, "unknown key; valid keys are {}", kNodeKeys);
    }
  }
  if (!has_address) FailAt(source, path + ".address", "required field is missing");
  return node;
}

std::vector<NodeSpec> ReadNodes(const YAML::Node& root, const std::string& source) {
  if (!root.IsMap()) {
    FailAt(source, "top level", "expected a mapping with a 'nodes' list, got {}", Describe(root));
  }
  std::vector<NodeSpec> nodes;
  bool has_nodes = false;
  for (const auto& [key, value] : MapEntries(root, source, "")) {
    if (key == "nodes") {
      if (!value.IsSequence()) {
        FailAt(source, "nodes", "expected a list of nodes, got {}", Describe(value));
      }
      for (std::size_t i = 0; i < value.size(); ++i) {
        nodes.push_back(ReadNode(value[i], source, NodePath(i)));
      }
      has_nodes = true;
    } else if (key == "ssh") {
      // AutoDist's SSH settings: accepted so its files load, unused because pods are launched
      // by Kubernetes or by the local launcher.
    } else {
      FailAt(source, key, "unknown top-level key; valid keys are nodes, ssh");
    }
  }
  if (!has_nodes) FailAt(source, "nodes", "required list of nodes is missing");
  return nodes;
}

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

void EmitIndices(YAML::Emitter& out, const char* key, const std::vector<int>& indices) {
  if (indices.empty()) return;
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (int index : indices) out << index;
  out << YAML::EndSeq;
}

}  // namespace

ResourceSpec ResourceSpec::FromYamlFile(const std::string& path) {
  return FromYamlString(ReadFileBytes(path, "resource spec"), path);
}

ResourceSpec ResourceSpec::FromYamlString(const std::string& text, const std::string& source) {
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) {
      Fail(ErrorCode::kInvalidArgument, "resource spec '{}': invalid YAML: {}", source, e.msg);
    }
    Fail(ErrorCode::kInvalidArgument, "resource spec '{}': invalid YAML at line {}, column {}: {}",
         source, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
  if (documents.size() > 1) {
    FailAt(source, "top level", "expected one YAML document, got {}", documents.size());
  }
  std::vector<NodeSpec> nodes;
  try {
    nodes = ReadNodes(documents.empty() ? YAML::Node() : documents.front(), source);
  } catch (const YAML::Exception& e) {
    // The readers above check types before converting, so this is a case they did not foresee;
    // it still must reach the caller as our error type.
    Fail(ErrorCode::kInvalidArgument, "resource spec '{}': {}", source, e.what());
  }
  return FromNodes(std::move(nodes), source);
}

ResourceSpec ResourceSpec::FromReplicaCounts(const ReplicaCounts& counts,
                                             const NodeAddressFn& address) {
  const std::string source = "replica counts";
  auto check_at_least = [&](int value, int minimum, const char* field) {
    if (value < minimum) FailAt(source, field, "expected at least {}, got {}", minimum, value);
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
  Validate(nodes, source, /*check_loopback=*/false);
  ResourceSpec spec;
  spec.nodes_ = std::move(nodes);
  return spec;
}

ResourceSpec ResourceSpec::FromNodes(std::vector<NodeSpec> nodes, const std::string& source) {
  Validate(nodes, source, /*check_loopback=*/true);
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

std::string ResourceSpec::ToYaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "nodes" << YAML::Value << YAML::BeginSeq;
  for (const NodeSpec& node : nodes_) {
    out << YAML::BeginMap;
    // Quoted, so that an address such as "null" or "true" reads back as the same string.
    out << YAML::Key << "address" << YAML::Value << YAML::DoubleQuoted << node.address;
    EmitIndices(out, "cpus", node.cpus);
    EmitIndices(out, "gpus", node.gpus);
    if (node.chief) out << YAML::Key << "chief" << YAML::Value << true;
    if (node.network_bandwidth.has_value()) {
      // fmt prints the shortest text that reads back as the same double.
      out << YAML::Key << "network_bandwidth" << YAML::Value
          << fmt::format("{}", *node.network_bandwidth);
    }
    if (!node.ssh_config.empty()) {
      out << YAML::Key << "ssh_config" << YAML::Value << YAML::DoubleQuoted << node.ssh_config;
    }
    if (node.role != NodeRole::kAny) {
      out << YAML::Key << "role" << YAML::Value << RoleName(node.role);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  AD_CHECK(out.good(), kInternal, "cannot serialize resource spec: {}", out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

std::string CpuDevice(const std::string& address, int index) {
  return fmt::format("{}:CPU:{}", address, index);
}

std::string GpuDevice(const std::string& address, int index) {
  return fmt::format("{}:GPU:{}", address, index);
}

}  // namespace autodist::strategy
