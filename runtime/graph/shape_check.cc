#include "runtime/graph/shape_check.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <exception>
#include <string>

#include "runtime/common/error.h"
#include "runtime/graph/initializers_as_inputs.h"
#include "runtime/graph/one_line.h"
#include "runtime/graph/weight_stripping.h"

namespace autodist::graph {
namespace {

// The model without the data of its float initializers: each becomes a graph input of the same
// type and shape, which is all inference needs from a weight. Integer initializers (Reshape's
// target shape, Slice's starts) keep their values, since inference reads them to compute shapes.
// Copying field by field keeps a large model's weights from being copied at all.
onnx::ModelProto WithoutFloatData(const onnx::ModelProto& model) {
  onnx::ModelProto copy;
  copy.set_ir_version(model.ir_version());
  *copy.mutable_opset_import() = model.opset_import();
  *copy.mutable_functions() = model.functions();
  const onnx::GraphProto& graph = model.graph();
  onnx::GraphProto* out = copy.mutable_graph();
  out->set_name(graph.name());
  *out->mutable_node() = graph.node();
  *out->mutable_input() = graph.input();
  *out->mutable_output() = graph.output();
  *out->mutable_value_info() = graph.value_info();
  // A weight-stripped model may lack the data of any initializer; those become inputs too.
  AddInitializersOrInputs(graph, *out, [](const onnx::TensorProto& tensor) {
    return tensor.data_type() == onnx::TensorProto::FLOAT || !HasTensorData(tensor);
  });
  return copy;
}

bool HasSubgraphs(const onnx::GraphProto& graph) {
  for (const onnx::NodeProto& node : graph.node()) {
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (attribute.has_g() || attribute.graphs_size() > 0) return true;
    }
  }
  return false;
}

}  // namespace

void CheckShapes(const onnx::ModelProto& model, const std::string& source) {
  // ONNX 1.12 resolves a subgraph's names against the outer scope before the subgraph's own
  // initializers, so a body constant named like an outer value fails inference although the
  // checker accepts it. The engine runs no control flow (If/Loop/Scan fail at load as unsupported
  // ops), and the compiler needs no shapes, so such graphs are not inferred.
  if (HasSubgraphs(model.graph())) return;
  onnx::ModelProto copy = WithoutFloatData(model);
  try {
    const onnx::ShapeInferenceOptions strict(/*check_type_val=*/true, /*strict_mode_val=*/1);
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), strict);
  } catch (const std::exception& e) {
    Fail(ErrorCode::kInvalidArgument, "model '{}' fails ONNX shape inference: {}", source,
         OneLine(e.what()));
  }
}

}  // namespace autodist::graph
