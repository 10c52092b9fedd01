#include "runtime/graph/initializers_as_inputs.h"

#include <string>
#include <unordered_set>

namespace autodist::graph {

void AddInitializersOrInputs(const onnx::GraphProto& from, onnx::GraphProto& to,
                             const std::function<bool(const onnx::TensorProto&)>& as_input) {
  std::unordered_set<std::string> inputs;
  for (const onnx::ValueInfoProto& input : to.input()) inputs.insert(input.name());
  for (const onnx::TensorProto& tensor : from.initializer()) {
    if (!as_input(tensor)) {
      *to.add_initializer() = tensor;
      continue;
    }
    if (inputs.contains(tensor.name())) continue;
    onnx::ValueInfoProto* input = to.add_input();
    input->set_name(tensor.name());
    onnx::TypeProto_Tensor* type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(tensor.data_type());
    onnx::TensorShapeProto* shape = type->mutable_shape();
    for (const int64_t dim : tensor.dims()) shape->add_dim()->set_dim_value(dim);
  }
}

}  // namespace autodist::graph
