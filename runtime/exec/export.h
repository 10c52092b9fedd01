// Export of a trained model: the original ONNX graph with its initializers replaced by the
// session's current variables and state, loadable by PyTorch or onnxruntime like any model.
#pragma once

#include <string>

#include "runtime/exec/session.h"

namespace autodist::exec {

// Writes `model` with the values of `session` to `path`.
void ExportModel(const onnx::ModelProto& model, Session& session, const std::string& path);

}  // namespace autodist::exec
