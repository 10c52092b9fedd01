// Small ONNX models built in protobuf, for tests that need a graph of a precise shape (a node the
// planner fuses, a name that collides, a weight that does not fit) that no exported fixture has.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace autodist::testing {

// An empty model of IR version 8 whose graph is `graph_name`, importing the default domain at
// `opset_version`.
inline onnx::ModelProto NewModel(const std::string& graph_name, int64_t opset_version = 14) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(opset_version);
  model.mutable_graph()->set_name(graph_name);
  return model;
}

// Declares `info` a tensor `name` of `elem_type` and `dims`, replacing any shape it had. A
// negative dimension is a free one, named by its axis ("d0", "d1", ...), so that the same axis of
// two values is the same symbol.
inline void SetTensorType(onnx::ValueInfoProto* info, const std::string& name,
                          const std::vector<int64_t>& dims,
                          int32_t elem_type = onnx::TensorProto::FLOAT) {
  info->set_name(name);
  onnx::TypeProto_Tensor* type = info->mutable_type()->mutable_tensor_type();
  type->set_elem_type(elem_type);
  onnx::TensorShapeProto* shape = type->mutable_shape();
  shape->clear_dim();
  for (const int64_t dim : dims) {
    if (dim < 0) {
      shape->add_dim()->set_dim_param("d" + std::to_string(shape->dim_size()));
    } else {
      shape->add_dim()->set_dim_value(dim);
    }
  }
}

inline void AddInput(onnx::GraphProto* graph, const std::string& name,
                     const std::vector<int64_t>& dims,
                     int32_t elem_type = onnx::TensorProto::FLOAT) {
  SetTensorType(graph->add_input(), name, dims, elem_type);
}

inline void AddOutput(onnx::GraphProto* graph, const std::string& name,
                      const std::vector<int64_t>& dims,
                      int32_t elem_type = onnx::TensorProto::FLOAT) {
  SetTensorType(graph->add_output(), name, dims, elem_type);
}

// The number of elements of a tensor of `dims` (1 for a scalar).
inline int64_t ElementCount(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (const int64_t dim : dims) count *= dim;
  return count;
}

// A FLOAT initializer `name` of `dims` holding `values` as float_data; with none, the caller
// gives it its data (raw, external) or leaves it without.
inline onnx::TensorProto* AddInitializer(onnx::GraphProto* graph, const std::string& name,
                                         const std::vector<int64_t>& dims,
                                         const std::vector<float>& values = {}) {
  onnx::TensorProto* tensor = graph->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  for (const int64_t dim : dims) tensor->add_dims(dim);
  for (const float value : values) tensor->add_float_data(value);
  return tensor;
}

// A node `op_type` reading `inputs` and writing `outputs`, named `name` unless that is empty
// (then the node has no name at all, as an exporter may leave it).
inline onnx::NodeProto* AddNode(onnx::GraphProto* graph, const std::string& op_type,
                                const std::vector<std::string>& inputs,
                                const std::vector<std::string>& outputs,
                                const std::string& name = "") {
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type(op_type);
  if (!name.empty()) node->set_name(name);
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  return node;
}

inline void SetIntAttribute(onnx::NodeProto* node, const std::string& name, int64_t value) {
  onnx::AttributeProto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(value);
}

}  // namespace autodist::testing
