#include "runtime/exec/export.h"

#include <onnx/onnx_pb.h>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/ops/onnx_tensor.h"

namespace autodist::exec {

void ExportModel(const onnx::ModelProto& model, const std::map<std::string, tensor::Tensor>& values,
                 const std::string& path) {
  onnx::ModelProto exported = model;
  for (auto& initializer : *exported.mutable_graph()->mutable_initializer()) {
    const auto it = values.find(initializer.name());
    if (it == values.end()) continue;
    const tensor::Shape dims(initializer.dims().begin(), initializer.dims().end());
    AD_CHECK(dims == it->second.shape() &&
                 static_cast<int32_t>(it->second.dtype()) == initializer.data_type(),
             kInternal, "export: '{}' is {} {}, its initializer {} of type {}", it->first,
             tensor::DTypeName(it->second.dtype()), tensor::ShapeToString(it->second.shape()),
             tensor::ShapeToString(dims), initializer.data_type());
    ops::TensorToProto(it->second, it->first, initializer);
  }
  std::string bytes;
  AD_CHECK(exported.SerializeToString(&bytes), kInternal, "cannot serialize the exported model");
  WriteFileBytes(path, bytes);
}

}  // namespace autodist::exec
