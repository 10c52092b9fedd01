#include "runtime/exec/node_fusion.h"

#include <onnx/onnx_pb.h>

#include <set>
#include <unordered_map>
#include <vector>

#include "runtime/ops/registry.h"

namespace autodist::exec {
namespace {

bool InDefaultDomain(const onnx::NodeProto& node) {
  return node.domain().empty() || node.domain() == "ai.onnx";
}

// The dims of the graph's float initializers that are not also graph inputs (a feed could replace
// those with another shape), by name.
std::unordered_map<std::string, std::vector<int64_t>> FixedFloatInitializers(
    const onnx::GraphProto& graph) {
  std::set<std::string> fed;
  for (const auto& input : graph.input()) fed.insert(input.name());
  std::unordered_map<std::string, std::vector<int64_t>> dims;
  for (const auto& initializer : graph.initializer()) {
    if (initializer.data_type() != onnx::TensorProto::FLOAT || fed.contains(initializer.name())) {
      continue;
    }
    dims[initializer.name()] = {initializer.dims().begin(), initializer.dims().end()};
  }
  return dims;
}

// The shape of `name` when it is a matrix known at planning: a fixed float initializer of rank 2,
// or its transpose by a default-domain Transpose (no perm, or [1, 0]), as PyTorch exports a
// Linear layer's weight in training mode. Empty otherwise.
std::vector<int64_t> FixedMatrixShape(
    const std::string& name, const std::unordered_map<std::string, std::vector<int64_t>>& fixed,
    const std::unordered_map<std::string, const onnx::NodeProto*>& producer_of) {
  if (const auto it = fixed.find(name); it != fixed.end()) {
    return it->second.size() == 2 ? it->second : std::vector<int64_t>{};
  }
  const auto producer = producer_of.find(name);
  if (producer == producer_of.end()) return {};
  const onnx::NodeProto& transpose = *producer->second;
  if (transpose.op_type() != "Transpose" || !InDefaultDomain(transpose) ||
      transpose.input_size() != 1) {
    return {};
  }
  for (const auto& attribute : transpose.attribute()) {
    if (attribute.name() == "perm" &&
        !(attribute.ints_size() == 2 && attribute.ints(0) == 1 && attribute.ints(1) == 0)) {
      return {};
    }
  }
  const auto it = fixed.find(transpose.input(0));
  if (it == fixed.end() || it->second.size() != 2) return {};
  return {it->second[1], it->second[0]};
}

// The bias an Add adds to `matmul`'s `product`: its other operand, when that is a fixed float
// initializer [N] and the MatMul's B a matrix [K, N] known at planning; empty otherwise.
std::string RowBias(const onnx::NodeProto& matmul, const onnx::NodeProto& add,
                    const std::string& product,
                    const std::unordered_map<std::string, std::vector<int64_t>>& fixed,
                    const std::unordered_map<std::string, const onnx::NodeProto*>& producer_of) {
  if (add.op_type() != "Add" || !InDefaultDomain(add) || add.input_size() != 2 ||
      add.output_size() != 1 || add.output(0).empty() || matmul.input_size() != 2) {
    return {};
  }
  const std::string& other = add.input(0) == product ? add.input(1) : add.input(0);
  const auto bias = fixed.find(other);
  if (other == product || bias == fixed.end() || bias->second.size() != 1) return {};
  const std::vector<int64_t> weight = FixedMatrixShape(matmul.input(1), fixed, producer_of);
  if (weight.size() != 2 || weight[1] != bias->second[0]) return {};
  return other;
}

}  // namespace

std::map<int, NodeFusion> FindNodeFusions(const onnx::GraphProto& graph, const std::string& loss,
                                          int64_t opset, tensor::DeviceKind backend) {
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
  std::unordered_map<std::string, const onnx::NodeProto*> producer_of;
  for (int n = 0; n < graph.node_size(); ++n) {
    for (const auto& output : graph.node(n).output()) {
      ++producers[output];
      producer_of[output] = &graph.node(n);
    }
    for (const auto& input : graph.node(n).input()) {
      if (input.empty()) continue;
      ++reads[input];
      reader[input] = n;
    }
  }
  // An unsupported consumer is left in the graph, to fail where the planner makes its kernel.
  const ops::KernelRegistry& kernels = ops::KernelRegistry::Global();
  const bool relu_runs = kernels.Supports("Relu", opset, backend);
  const bool add_runs = kernels.Supports("Add", opset, backend);
  const auto fixed = FixedFloatInitializers(graph);
  std::map<int, NodeFusion> fusions;
  for (int n = 0; n < graph.node_size(); ++n) {
    const onnx::NodeProto& producer = graph.node(n);
    const bool gemm = producer.op_type() == "Gemm";
    const bool matmul = producer.op_type() == "MatMul";
    if (!(gemm || matmul) || !InDefaultDomain(producer) || producer.output_size() != 1) continue;
    const std::string& product = producer.output(0);
    if (product.empty() || kept.contains(product) || producers[product] != 1 ||
        reads[product] != 1) {
      continue;
    }
    const int consumer = reader.at(product);
    const onnx::NodeProto& next = graph.node(consumer);
    if (gemm && next.op_type() == "Relu" && InDefaultDomain(next) && next.input_size() == 1 &&
        next.output_size() == 1 && !next.output(0).empty() && relu_runs) {
      fusions[n] = NodeFusion{consumer, ops::FusedActivation::kRelu, {}};
    } else if (matmul && add_runs) {
      std::string bias = RowBias(producer, next, product, fixed, producer_of);
      if (!bias.empty()) {
        fusions[n] = NodeFusion{consumer, ops::FusedActivation::kNone, std::move(bias)};
      }
    }
  }
  return fusions;
}

}  // namespace autodist::exec
