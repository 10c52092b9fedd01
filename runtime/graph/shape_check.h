// ONNX shape inference over a model at load time, so a graph whose shapes cannot fit together
// (a Gemm whose weight does not match its input, a Concat of different ranks) is refused with the
// node's op type and name before any step runs, instead of failing inside a kernel mid-training.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace autodist::graph {

// Runs ONNX's shape inference in strict mode (node-level errors throw, types are checked) on a
// copy of `model` without float tensor data. Throws InvalidArgument naming `source` and ONNX's
// reason (which names the op type and node). Dimensions left symbolic (the batch) are fine: the
// engine computes every shape again at run time. Graphs with subgraphs (If/Loop/Scan) are not
// inferred (see shape_check.cc).
void CheckShapes(const onnx::ModelProto& model, const std::string& source);

}  // namespace autodist::graph
