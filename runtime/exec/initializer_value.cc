#include "runtime/exec/initializer_value.h"

#include <onnx/onnx_pb.h>

#include "runtime/graph/external_data.h"
#include "runtime/ops/onnx_tensor.h"

namespace autodist::exec {

tensor::Tensor InitializerValue(const onnx::TensorProto& initializer, const std::string& model_path,
                                const std::string& what) {
  if (!graph::IsExternalData(initializer)) return ops::TensorFromProto(initializer, what);
  const graph::ExternalDataRange range =
      graph::ResolveExternalData(initializer, graph::ModelDirectory(model_path), what);
  return ops::TensorFromExternalData(initializer, range.path, range.offset, range.length, what);
}

}  // namespace autodist::exec
