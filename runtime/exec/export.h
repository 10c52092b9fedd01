// Export of a trained model: the original ONNX graph with its initializers replaced by the
// trained variables and replica-local state, loadable by PyTorch or onnxruntime like any model.
// A model past the threshold (or when asked) is written the way ONNX writes models over 2 GiB:
// the initializers of 1 KiB or more in "<file name>.data" beside it (external data), each at a
// 4 KiB-aligned offset so readers can map it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "runtime/exec/export_options.h"
#include "runtime/exec/session.h"

namespace autodist::exec {

// Tensors smaller than this stay inline in an external-data export (onnx.save_model's default).
inline constexpr uint64_t kExternalTensorMinBytes = 1024;

// Writes `model` (loaded from `source`, whose directory holds its own external data) to `path`
// with the initializers named in `values` replaced (trainable variables and replica-local state),
// durably: a data file first, then the model. A value whose shape or type differs from its
// initializer is an error, as is an inline model past protobuf's 2 GiB.
void ExportModel(const onnx::ModelProto& model, const std::string& source,
                 const std::map<std::string, tensor::Tensor>& values, const std::string& path,
                 const ExportOptions& options = {});

}  // namespace autodist::exec
