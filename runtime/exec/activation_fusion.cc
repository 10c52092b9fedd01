#include "runtime/exec/activation_fusion.h"

#include <onnx/onnx_pb.h>

#include <set>
#include <unordered_map>

#include "runtime/ops/registry.h"

namespace autodist::exec {
namespace {

bool InDefaultDomain(const onnx::NodeProto& node) {
  return node.domain().empty() || node.domain() == "ai.onnx";
}

}  // namespace

std::map<int, ActivationFusion> FindActivationFusions(const onnx::GraphProto& graph,
                                                      const std::string& loss, int64_t opset,
                                                      tensor::DeviceKind backend) {
  // Tensors that must exist as they are: graph outputs and the loss. Names of graph inputs and
  // initializers are not fused away either, so a graph that also produces one of them still
  // gets the planner's "produced twice" error.
  std::set<std::string> kept{loss};
  for (const auto& output : graph.output()) kept.insert(output.name());
  for (const auto& input : graph.input()) kept.insert(input.name());
  for (const auto& initializer : graph.initializer()) kept.insert(initializer.name());
  std::unordered_map<std::string, int> producers;  // tensor -> how many nodes produce it
  std::unordered_map<std::string, int> reads;      // tensor -> how many node inputs read it
  std::unordered_map<std::string, int> reader;     // tensor -> the last node reading it
  for (int n = 0; n < graph.node_size(); ++n) {
    for (const auto& output : graph.node(n).output()) ++producers[output];
    for (const auto& input : graph.node(n).input()) {
      if (input.empty()) continue;
      ++reads[input];
      reader[input] = n;
    }
  }
  // An unsupported Relu is left in the graph, to fail where the planner makes its kernel.
  const bool relu_runs = ops::KernelRegistry::Global().Supports("Relu", opset, backend);
  std::map<int, ActivationFusion> fusions;
  for (int n = 0; n < graph.node_size(); ++n) {
    const onnx::NodeProto& producer = graph.node(n);
    if (producer.op_type() != "Gemm" || !InDefaultDomain(producer) || producer.output_size() != 1) {
      continue;
    }
    const std::string& product = producer.output(0);
    if (product.empty() || kept.contains(product) || producers[product] != 1 ||
        reads[product] != 1) {
      continue;
    }
    const int consumer = reader.at(product);
    const onnx::NodeProto& activation = graph.node(consumer);
    if (activation.op_type() == "Relu" && InDefaultDomain(activation) &&
        activation.input_size() == 1 && activation.output_size() == 1 &&
        !activation.output(0).empty() && relu_runs) {
      fusions[n] = ActivationFusion{consumer, ops::FusedActivation::kRelu};
    }
  }
  return fusions;
}

}  // namespace autodist::exec
