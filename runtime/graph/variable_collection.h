// The variable table of an ONNX graph: its float initializers, and what their uses say about
// sparsity (Gather on axis 0), partitioning (control flow) and trainability (BatchNorm state).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "runtime/graph/variable.h"

namespace autodist::graph {

// Float initializers of the main graph, in initializer order, with shape, data type, bytes,
// sparse, partitionable and trainable filled in (gradient_name is left empty). Throws
// InvalidArgument naming `source` and the initializer when one has a negative dimension, a
// duplicate name, or data that does not match its dims.
std::vector<Variable> CollectVariables(const onnx::GraphProto& graph, const std::string& source);

}  // namespace autodist::graph
