// Conversion between onnx::TensorProto and tensor::Tensor.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/tensor/tensor.h"

namespace onnx {
class TensorProto;
}

namespace autodist::ops {

// Reads raw_data or the typed repeated fields; throws InvalidArgument naming `what` when the
// data is missing, of the wrong size, external (TensorFromExternalData reads that), or of an
// unsupported type.
tensor::Tensor TensorFromProto(const onnx::TensorProto& proto, const std::string& what);

// Reads a tensor of the proto's type and dims from `length` bytes at `offset` of `path` (its
// external data, resolved by graph::ResolveExternalData), straight into the tensor's storage.
// Throws InvalidArgument naming `what` and the file when the length disagrees with the shape or
// the file cannot be read.
tensor::Tensor TensorFromExternalData(const onnx::TensorProto& proto, const std::string& path,
                                      int64_t offset, int64_t length, const std::string& what);

// Writes `value` as raw_data (little-endian, as ONNX specifies) under `name`.
void TensorToProto(const tensor::Tensor& value, const std::string& name, onnx::TensorProto& proto);

}  // namespace autodist::ops
