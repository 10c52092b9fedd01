// Which activation nodes the planner fuses into the node producing their input: Gemm -> Relu
// becomes one Gemm step whose kernel applies Relu to its product (ops::FusedActivation), so the
// product is written once and the tensor between the two never exists. Only where it changes no
// result: the Gemm's output is read by that Relu alone (not by another node, not a graph output,
// not the loss), and both nodes are ones the backend has kernels for, so every error a bad graph
// gets is the unfused graph's. Gemm and Relu do the same in training and inference, so the
// fusion holds for both.
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

struct ActivationFusion {
  int activation = -1;  // the activation node's index in the graph
  ops::FusedActivation kind = ops::FusedActivation::kNone;
};

// The fusable pairs of `graph`, by the producing node's index (graph order). `loss` is the
// tensor asked for as the loss (empty: none named), kept like a graph output; `opset` is the
// graph's default-domain opset, `backend` the kernels' backend. Whether the producer's kernel
// takes the activation is its kernel's to say (ops::OpKernel::TakesFusedActivation).
std::map<int, ActivationFusion> FindActivationFusions(const onnx::GraphProto& graph,
                                                      const std::string& loss, int64_t opset,
                                                      tensor::DeviceKind backend);

}  // namespace autodist::exec
