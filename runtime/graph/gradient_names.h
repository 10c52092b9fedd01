// Gradient tensor names (the scheme is described in graph_item.h): `v_grad`, or `v_grad_1`,
// `v_grad_2`, ... when the graph already uses the name.
#pragma once

#include <onnx/onnx_pb.h>

#include <vector>

#include "runtime/graph/variable.h"

namespace autodist::graph {

// Sets gradient_name of every trainable variable, in order, to the first candidate name that no
// tensor of `graph` (subgraphs included) and no earlier gradient uses. Others get "".
void AssignGradientNames(const onnx::GraphProto& graph, std::vector<Variable>* variables);

}  // namespace autodist::graph
