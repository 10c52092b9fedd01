// GraphItem: an ONNX model plus the variable table the compiler needs (proto/graphitem.proto).
//
// Gradient naming scheme (documented in docs/architecture.md): the gradient of variable `v` is the
// tensor `v_grad`; if the graph already has a tensor of that name, `v_grad_1`, `v_grad_2`, ... the
// first that is free. grad_target_pairs maps these names to their variables.
#pragma once

#include <string>
#include <vector>

#include "proto/graphitem.pb.h"
#include "runtime/graph/op_support.h"
#include "runtime/graph/variable.h"

namespace onnx {
class ModelProto;
}

namespace autodist::graph {

// Metadata key set on a model whose initializers were stripped of their data.
inline constexpr const char* kWeightsStrippedKey = "autodist.weights_stripped";

class GraphItem {
 public:
  // Builds a GraphItem from a model; runs the ONNX checker (skipping the tensor-data checks of a
  // weight-stripped model). `source` names the model in error messages (usually its path).
  static GraphItem FromOnnx(const onnx::ModelProto& model, const std::string& source);

  // Loads either an ONNX model file or a serialized GraphItem (as written by `inspect -o`).
  static GraphItem Load(const std::string& path);

  // Parses the bytes of an ONNX model or a serialized GraphItem; `source` names them in errors.
  static GraphItem Parse(const std::string& bytes, const std::string& source);

  // All float initializers, in initializer order (trainable or not).
  const std::vector<Variable>& variables() const { return variables_; }

  // The trainable subset, in initializer order: what the strategy builders distribute.
  std::vector<Variable> TrainableVariables() const;

  // The GraphItem message; with strip_weights, initializers keep name/type/dims but no data.
  autodist::proto::GraphItem ToProto(bool strip_weights) const;

  // The model's nodes and opsets, for the kernel preflight (op_support.h).
  const ModelOps& ops() const { return ops_; }

  const std::string& source() const { return source_; }

 private:
  GraphItem() = default;

  autodist::proto::GraphItem proto_;  // graph_def packs the full ModelProto
  std::vector<Variable> variables_;
  ModelOps ops_;
  std::string source_;
};

}  // namespace autodist::graph
