// Weight-stripped models: initializers that keep name, type and dims but no data, so a large
// model's structure fits a ConfigMap (`autodist inspect --strip-weights`).
#pragma once

#include <onnx/onnx_pb.h>

namespace autodist::graph {

// True when the tensor holds data in any field, or points at external data.
bool HasTensorData(const onnx::TensorProto& tensor);

// True when the model carries the kWeightsStrippedKey = "true" metadata.
bool IsWeightsStripped(const onnx::ModelProto& model);

// Clears the data of every main-graph initializer (keeping name, data_type and dims) and marks
// the model with kWeightsStrippedKey = "true".
void StripWeights(onnx::ModelProto* model);

}  // namespace autodist::graph
