#include "runtime/graph/op_support.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::graph {
namespace {

// "ai.onnx" and "" both name the default domain.
std::string DomainKey(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

bool Runs(const KernelTable& table, const std::string& op_type, int64_t opset) {
  const auto it = table.find(op_type);
  if (it == table.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(), [opset](const OpsetRange& range) {
    return opset >= range.since && opset <= range.until;
  });
}

// A long list of nodes of one op type (a model repeats an op per layer)
// names the first few and counts the rest.
constexpr size_t kNodesNamed = 5;

std::string DescribeNodes(const std::vector<std::string>& nodes) {
  std::vector<std::string> quoted;
  for (size_t i = 0; i < nodes.size() && i < kNodesNamed; ++i) {
    quoted.push_back(fmt::format("'{}'", nodes[i]));
  }
  std::string text =
      fmt::format("{} {}", nodes.size() == 1 ? "node" : "nodes", fmt::join(quoted, ", "));
  if (nodes.size() > kNodesNamed) text += fmt::format(" and {} more", nodes.size() - kNodesNamed);
  return text;
}

std::string Describe(const UnsupportedOp& op) {
  const std::string name = op.domain.empty() ? op.op_type : op.domain + "." + op.op_type;
  std::string opset = op.opset > 0 ? fmt::format("opset {}", op.opset) : "no opset imported";
  if (op.other_opsets) opset += ", supported only in other opsets";
  return fmt::format("{} ({}: {})", name, opset, DescribeNodes(op.nodes));
}

}  // namespace

ModelOps OpsOf(const onnx::ModelProto& model) {
  ModelOps ops;
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    ops.opsets[DomainKey(opset.domain())] = opset.version();
  }
  ops.nodes.reserve(static_cast<size_t>(model.graph().node_size()));
  for (const onnx::NodeProto& node : model.graph().node()) {
    ops.nodes.push_back({node.op_type(), DomainKey(node.domain()), node.name()});
  }
  return ops;
}

std::vector<UnsupportedOp> FindUnsupportedOps(const ModelOps& ops, Backend backend) {
  const KernelTable& table = KernelCatalog(backend);
  std::map<std::pair<std::string, std::string>, UnsupportedOp> found;  // (domain, op type)
  for (size_t i = 0; i < ops.nodes.size(); ++i) {
    const ModelOps::Node& node = ops.nodes[i];
    const auto opset_it = ops.opsets.find(node.domain);
    const int64_t opset = opset_it == ops.opsets.end() ? 0 : opset_it->second;
    // Our kernels serve the default domain only.
    if (node.domain.empty() && Runs(table, node.op_type, opset)) continue;
    UnsupportedOp& op = found[{node.domain, node.op_type}];
    op.op_type = node.op_type;
    op.domain = node.domain;
    op.opset = opset;
    op.other_opsets = node.domain.empty() && table.contains(node.op_type);
    op.nodes.push_back(node.name.empty() ? fmt::format("#{}", i) : node.name);
  }
  std::vector<UnsupportedOp> unsupported;
  unsupported.reserve(found.size());
  for (auto& [key, op] : found) unsupported.push_back(std::move(op));
  return unsupported;
}

void CheckOpsSupported(const ModelOps& ops, Backend backend, const std::string& source) {
  const std::vector<UnsupportedOp> unsupported = FindUnsupportedOps(ops, backend);
  if (unsupported.empty()) return;
  std::vector<std::string> described;
  described.reserve(unsupported.size());
  for (const UnsupportedOp& op : unsupported) described.push_back(Describe(op));
  Fail(ErrorCode::kInvalidArgument,
       "model '{}' has {} the {} backend has no kernel for: {}; docs/training.md lists the ops "
       "each backend runs",
       source, unsupported.size() == 1 ? "an op" : "ops", BackendName(backend),
       fmt::join(described, ", "));
}

}  // namespace autodist::graph
