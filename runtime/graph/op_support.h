// The model preflight: does every node of a model have a kernel on the backend that will run it?
// `autodist inspect`, `compile` and `run` and the operator ask before anything starts, so that a
// model with an op we do not run (a PyTorch LSTM export's LSTM and ConstantOfShape) is one error
// listing all of them, not a job whose workers fail one op at a time after it started.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/graph/kernel_catalog.h"

namespace onnx {
class ModelProto;
}

namespace autodist::graph {

// The part of a model the preflight reads: each node's op type, domain and name, and the opset
// the model imports per domain.
struct ModelOps {
  struct Node {
    std::string op_type;
    std::string domain;  // "" for the default ONNX domain
    std::string name;    // may be empty

    bool operator==(const Node&) const = default;
  };
  std::vector<Node> nodes;                // the main graph's, in model order
  std::map<std::string, int64_t> opsets;  // domain ("" for the default) -> imported version

  bool operator==(const ModelOps&) const = default;
};

ModelOps OpsOf(const onnx::ModelProto& model);

// One op type the backend cannot run, with every node of it.
struct UnsupportedOp {
  std::string op_type;
  std::string domain;              // "" for the default ONNX domain
  int64_t opset = 0;               // the model's opset of that domain; 0 when it imports none
  bool other_opsets = false;       // the backend runs this op type, but only in other opsets
  std::vector<std::string> nodes;  // node names; "#<index>" for a node without one
};

// The op types of `ops` without a kernel on `backend`, sorted by domain and op type.
std::vector<UnsupportedOp> FindUnsupportedOps(const ModelOps& ops, Backend backend);

// Throws InvalidArgument naming `source`, the backend and every unsupported op type with its
// opset and nodes:
//   model 'lstm.onnx' has ops the cpu backend has no kernel for: ConstantOfShape (opset 14:
//   node '/lstm/ConstantOfShape'), LSTM (opset 14: node '/lstm/LSTM'); docs/training.md lists
//   the ops each backend runs
void CheckOpsSupported(const ModelOps& ops, Backend backend, const std::string& source);

}  // namespace autodist::graph
