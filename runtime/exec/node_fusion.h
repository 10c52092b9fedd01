// Which nodes the planner fuses into the node producing their input, so that the product is
// written once and the tensor between the two never exists:
//
// * Gemm -> Relu: one Gemm step whose kernel applies Relu to its product (ops::FusedActivation);
// * MatMul -> Add of a bias: one MatMul step whose kernel adds the bias [N] to every row of its
//   product (ops::NodeInfo::fused_bias), as PyTorch exports a Linear layer on a sequence. The
//   bias must be a float initializer [N] and the MatMul's B a float initializer [K, N] or the
//   Transpose of one [N, K] (none of them fed as a graph input), so the Add is a row bias
//   whatever the batch.
//
// Only where it changes no result: the producer's output is read by that node alone (not by
// another node, not a graph output, not the loss), and both nodes are ones the backend has
// kernels for, so every error a bad graph gets is the unfused graph's. Both pairs do the same in
// training and inference, so the fusion holds for both.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "runtime/ops/fused_activation.h"
#include "runtime/tensor/tensor.h"

namespace onnx {
class GraphProto;
}

namespace autodist::exec {

struct NodeFusion {
  int consumer = -1;  // the fused node's index in the graph: the activation, or the Add
  ops::FusedActivation activation = ops::FusedActivation::kNone;  // for Gemm -> Relu
  std::string bias;  // for MatMul -> Add: the Add's bias operand (empty for an activation)
};

// The fusable pairs of `graph`, by the producing node's index (graph order). `loss` is the
// tensor asked for as the loss (empty: none named), kept like a graph output; `opset` is the
// graph's default-domain opset, `backend` the kernels' backend. Whether the producer's kernel
// takes the fusion is its kernel's to say (ops::OpKernel::TakesFusedActivation, TakesFusedBias).
std::map<int, NodeFusion> FindNodeFusions(const onnx::GraphProto& graph, const std::string& loss,
                                          int64_t opset, tensor::DeviceKind backend);

}  // namespace autodist::exec
