// Export of a trained model: the original ONNX graph with its initializers replaced by the
// trained variables and replica-local state, loadable by PyTorch or onnxruntime like any model.
#pragma once

#include <map>
#include <string>

#include "runtime/exec/session.h"

namespace autodist::exec {

// Writes `model` to `path` with the initializers named in `values` replaced (trainable variables
// and replica-local state); a value whose shape or type differs from its initializer is an error.
void ExportModel(const onnx::ModelProto& model, const std::map<std::string, tensor::Tensor>& values,
                 const std::string& path);

}  // namespace autodist::exec
