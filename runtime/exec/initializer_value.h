// An initializer's value, wherever the model keeps it: inline in the message, or in an external
// data file beside the model (graph/external_data.h). The one reading every consumer shares: the
// execution plan, export and the large-model benchmark.
#pragma once

#include <string>

#include "runtime/tensor/tensor.h"

namespace onnx {
class TensorProto;
}

namespace autodist::exec {

// `model_path` locates external data; `what` names the initializer in errors.
tensor::Tensor InitializerValue(const onnx::TensorProto& initializer, const std::string& model_path,
                                const std::string& what);

}  // namespace autodist::exec
