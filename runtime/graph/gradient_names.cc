#include "runtime/graph/gradient_names.h"

#include <fmt/format.h>

#include <string>
#include <unordered_set>

namespace autodist::graph {
namespace {

void CollectTensorNames(const onnx::GraphProto& graph, std::unordered_set<std::string>* names) {
  for (const onnx::ValueInfoProto& info : graph.input()) names->insert(info.name());
  for (const onnx::ValueInfoProto& info : graph.output()) names->insert(info.name());
  for (const onnx::ValueInfoProto& info : graph.value_info()) names->insert(info.name());
  for (const onnx::TensorProto& tensor : graph.initializer()) names->insert(tensor.name());
  for (const onnx::SparseTensorProto& tensor : graph.sparse_initializer()) {
    names->insert(tensor.values().name());
  }
  for (const onnx::NodeProto& node : graph.node()) {
    names->insert(node.input().begin(), node.input().end());
    names->insert(node.output().begin(), node.output().end());
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (attribute.has_g()) CollectTensorNames(attribute.g(), names);
      for (const onnx::GraphProto& subgraph : attribute.graphs()) {
        CollectTensorNames(subgraph, names);
      }
    }
  }
}

}  // namespace

void AssignGradientNames(const onnx::GraphProto& graph, std::vector<Variable>* variables) {
  std::unordered_set<std::string> taken;
  CollectTensorNames(graph, &taken);
  for (Variable& variable : *variables) {
    variable.gradient_name.clear();
    if (!variable.trainable) continue;
    const std::string base = variable.name + "_grad";
    std::string candidate = base;
    for (int suffix = 1; taken.contains(candidate); ++suffix) {
      candidate = fmt::format("{}_{}", base, suffix);
    }
    taken.insert(candidate);
    variable.gradient_name = std::move(candidate);
  }
}

}  // namespace autodist::graph
