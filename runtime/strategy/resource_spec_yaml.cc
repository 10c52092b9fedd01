#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <utility>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/config/yaml_reader.h"
#include "runtime/strategy/resource_spec.h"
#include "runtime/strategy/resource_spec_rules.h"

namespace autodist::strategy {
namespace {

using config::MapReader;
using config::ParseContext;
using detail::NodePath;

const std::vector<std::string> kNodeKeys = {"address",           "cpus",       "gpus", "chief",
                                            "network_bandwidth", "ssh_config", "role"};

std::vector<int> ReadIndices(const ParseContext& context, const YAML::Node& value,
                             const std::string& path) {
  if (!value.IsSequence()) {
    context.Fail(path, "expected a list of non-negative integers, got {}", config::Describe(value));
  }
  std::vector<int> indices;
  for (size_t i = 0; i < value.size(); ++i) {
    const YAML::Node item = value[i];
    int index = 0;
    if (!item.IsScalar() || !YAML::convert<int>::decode(item, index)) {
      context.Fail(config::IndexPath(path, i), "expected a non-negative integer, got {}",
                   config::Describe(item));
    }
    indices.push_back(index);  // the sign is checked with the other rules (ValidateNodes)
  }
  return indices;
}

NodeRole ReadRole(const ParseContext& context, const YAML::Node& value, const std::string& path) {
  if (value.IsScalar() && value.Scalar() == "worker") return NodeRole::kWorker;
  if (value.IsScalar() && value.Scalar() == "ps") return NodeRole::kParameterServer;
  context.Fail(path, "expected 'worker' or 'ps', got {}", config::Describe(value));
}

NodeSpec ReadNode(ParseContext& context, const YAML::Node& yaml, const std::string& path) {
  const MapReader map(context, yaml, path, kNodeKeys);
  NodeSpec node;
  node.address = map.RequireString("address");
  if (const YAML::Node* cpus = map.Find("cpus")) {
    node.cpus = ReadIndices(context, *cpus, map.PathOf("cpus"));
  }
  if (const YAML::Node* gpus = map.Find("gpus")) {
    node.gpus = ReadIndices(context, *gpus, map.PathOf("gpus"));
  }
  node.chief = map.Bool("chief").value_or(false);
  if (const YAML::Node* bandwidth = map.Find("network_bandwidth")) {
    node.network_bandwidth =
        config::ReadNumber(context, *bandwidth, map.PathOf("network_bandwidth"));
  }
  node.ssh_config = map.String("ssh_config").value_or("");
  if (const YAML::Node* role = map.Find("role")) {
    node.role = ReadRole(context, *role, map.PathOf("role"));
  }
  return node;
}

std::vector<NodeSpec> ReadNodes(ParseContext& context, const YAML::Node& root) {
  // `ssh`: AutoDist's SSH settings, accepted so that its files load, unused because pods are
  // launched by Kubernetes or by the local launcher.
  const MapReader top(context, root, "", {"nodes", "ssh"});
  const YAML::Node& list = top.Require("nodes");
  if (!list.IsSequence()) {
    context.Fail("nodes", "expected a list of nodes, got {}", config::Describe(list));
  }
  std::vector<NodeSpec> nodes;
  for (size_t i = 0; i < list.size(); ++i) nodes.push_back(ReadNode(context, list[i], NodePath(i)));
  return nodes;
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
  ParseContext context("resource spec " + source);
  const std::vector<YAML::Node> documents = config::LoadYamlDocuments(text, context.source());
  if (documents.size() > 1) {
    context.Fail("", "expected one YAML document, got {}", documents.size());
  }
  ResourceSpec spec;
  try {
    spec.nodes_ = ReadNodes(context, documents.empty() ? YAML::Node() : documents.front());
  } catch (const YAML::Exception& e) {
    // The readers check types before converting, so this is a case they did not foresee; it
    // still must reach the caller as our error type.
    context.Fail("", "{}", e.what());
  }
  detail::ValidateNodes(spec.nodes_, context, /*check_loopback=*/true);
  return spec;
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
      out << YAML::Key << "role" << YAML::Value << detail::RoleName(node.role);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  AD_CHECK(out.good(), kInternal, "cannot serialize resource spec: {}", out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

}  // namespace autodist::strategy
