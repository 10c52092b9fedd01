#include "runtime/strategy/resource_spec_rules.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace autodist::strategy::detail {
namespace {

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
void NormalizeIndices(std::vector<int>& indices, const config::ParseContext& context,
                      const std::string& path) {
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0) {
      context.Fail(config::IndexPath(path, i), "expected a non-negative integer, got {}",
                   indices[i]);
    }
  }
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
}

}  // namespace

void ValidateNodes(std::vector<NodeSpec>& nodes, const config::ParseContext& context,
                   bool check_loopback) {
  if (nodes.empty()) context.Fail("nodes", "expected at least one node, got an empty list");

  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    NodeSpec& node = nodes[i];
    const std::string path = NodePath(i);
    if (node.address.empty()) context.Fail(path + ".address", "must not be empty");
    // Device names are "<address>:<type>:<index>"; whitespace would make them unreadable.
    if (std::any_of(node.address.begin(), node.address.end(),
                    [](unsigned char c) { return std::isspace(c) != 0 || std::iscntrl(c) != 0; })) {
      context.Fail(path + ".address", "must not contain whitespace, got '{}'", node.address);
    }
    const auto [previous, inserted] = seen.emplace(node.address, i);
    if (!inserted) {
      context.Fail(path + ".address", "duplicate address '{}' (also {})", node.address,
                   NodePath(previous->second));
    }
    if (check_loopback && nodes.size() > 1 && IsLoopbackAddress(node.address)) {
      context.Fail(
          path + ".address",
          "loopback address '{}' cannot be used when there are several nodes; use an address "
          "the other nodes can reach",
          node.address);
    }
    NormalizeIndices(node.cpus, context, path + ".cpus");
    NormalizeIndices(node.gpus, context, path + ".gpus");
    if (node.network_bandwidth.has_value()) {
      const double bandwidth = *node.network_bandwidth;
      if (!std::isfinite(bandwidth) || bandwidth <= 0) {
        context.Fail(path + ".network_bandwidth", "expected a positive number of Gbit/s, got {}",
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
    if (chiefs.empty()) context.Fail("nodes", "several nodes and none is marked chief: true");
    if (chiefs.size() > 1) {
      context.Fail(NodePath(chiefs[1]) + ".chief",
                   "nodes '{}' and '{}' are both marked chief: true; exactly one node may be",
                   nodes[chiefs[0]].address, nodes[chiefs[1]].address);
    }
  }

  // Without a node that may host replicas there is nothing to train on.
  if (std::all_of(nodes.begin(), nodes.end(),
                  [](const NodeSpec& n) { return n.role == NodeRole::kParameterServer; })) {
    context.Fail("nodes", "every node has role ps; at least one node must host replicas");
  }
}

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

std::string NodePath(size_t index) { return config::IndexPath("nodes", index); }

}  // namespace autodist::strategy::detail
