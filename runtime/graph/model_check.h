// Validation of an ONNX model before anything reads it: supported opset, the ONNX checker and
// ONNX shape inference (shape_check.h).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace autodist::graph {

// Newest opset of the default ONNX domain we accept: the newest libonnx 1.12 knows.
inline constexpr int64_t kMaxDefaultOpset = 17;

// `source` is the model's path: external data (external_data.h) is resolved relative to it.
// Throws InvalidArgument naming `source` when the model imports a default-domain opset newer
// than kMaxDefaultOpset, fails the ONNX checker or fails shape inference (CheckShapes).
// Weight-stripped models are checked without their (absent) tensor data; see the comment in
// model_check.cc.
void CheckModel(const onnx::ModelProto& model, const std::string& source);

}  // namespace autodist::graph
