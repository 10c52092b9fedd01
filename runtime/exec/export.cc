#include "runtime/exec/export.h"

#include <onnx/onnx_pb.h>

#include <set>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/ops/onnx_tensor.h"

namespace autodist::exec {

void ExportModel(const onnx::ModelProto& model, Session& session, const std::string& path) {
  onnx::ModelProto exported = model;
  const std::set<std::string> trainable(session.trainable_names().begin(),
                                        session.trainable_names().end());
  const std::set<std::string> states(session.state_names().begin(), session.state_names().end());
  for (auto& initializer : *exported.mutable_graph()->mutable_initializer()) {
    const std::string name = initializer.name();
    if (trainable.contains(name)) {
      ops::TensorToProto(session.variable(name), name, initializer);
    } else if (states.contains(name)) {
      ops::TensorToProto(session.state(name), name, initializer);
    }
  }
  std::string bytes;
  AD_CHECK(exported.SerializeToString(&bytes), kInternal, "cannot serialize the exported model");
  WriteFileBytes(path, bytes);
}

}  // namespace autodist::exec
