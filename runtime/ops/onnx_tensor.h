// Conversion between onnx::TensorProto and tensor::Tensor.
#pragma once

#include <string>

#include "runtime/tensor/tensor.h"

namespace onnx {
class TensorProto;
}

namespace autodist::ops {

// Reads raw_data or the typed repeated fields; throws InvalidArgument naming `what` when the
// data is missing, of the wrong size, external, or of an unsupported type.
tensor::Tensor TensorFromProto(const onnx::TensorProto& proto, const std::string& what);

// Writes `value` as raw_data (little-endian, as ONNX specifies) under `name`.
void TensorToProto(const tensor::Tensor& value, const std::string& name, onnx::TensorProto& proto);

}  // namespace autodist::ops
