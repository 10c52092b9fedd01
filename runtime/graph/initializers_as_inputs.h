// Turning initializers into graph inputs of the same name, type and shape: how the ONNX checker
// and shape inference see a model without reading (or copying) weight data they do not need.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>

namespace autodist::graph {

// Appends `from`'s initializers to `to`: those `as_input` picks are declared as inputs of `to`
// instead (no data), the others are copied whole. An initializer already named among `to`'s
// inputs (IR < 4 models list every initializer there) is not declared twice.
void AddInitializersOrInputs(const onnx::GraphProto& from, onnx::GraphProto& to,
                             const std::function<bool(const onnx::TensorProto&)>& as_input);

}  // namespace autodist::graph
