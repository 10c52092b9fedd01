// ONNX external data: an initializer whose bytes live in another file beside the model (the
// TensorProto's `external_data` entries `location`, `offset`, `length`, with data_location
// EXTERNAL), the standard way past protobuf's 2 GiB limit on one message. This resolves and
// checks the reference; the bytes themselves are read straight into tensor storage
// (ops::TensorFromExternalData), never through the model's message.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>

namespace autodist::graph {

// Where one tensor's data is: a regular file inside the model's directory, and the byte range.
struct ExternalDataRange {
  std::string location;  // as written in the model, relative to the model's directory
  std::string path;      // the file it names
  int64_t offset = 0;
  int64_t length = 0;  // the `length` entry, or the rest of the file from `offset`
};

// True when the tensor's data is external (data_location EXTERNAL or external_data entries).
bool IsExternalData(const onnx::TensorProto& tensor);

// The directory external data is relative to: that of the model file `model_path` (the current
// directory for a bare file name).
std::string ModelDirectory(const std::string& model_path);

// Resolves `tensor`'s external data against `model_dir`. Throws InvalidArgument naming `what`
// and the file for: no `location`, an absolute location or one that leaves the model's directory
// (`../`, or a link out of it), a missing or non-regular file, an offset or length that is not a
// number or lies beyond the file, and unknown keys.
ExternalDataRange ResolveExternalData(const onnx::TensorProto& tensor, const std::string& model_dir,
                                      const std::string& what);

// Resolves every main-graph initializer with external data (see ResolveExternalData), so a bad
// reference is found when the model is loaded, before any process starts. A float initializer's
// length must also match its dims (other types are checked when they are read).
void CheckExternalData(const onnx::ModelProto& model, const std::string& model_path);

}  // namespace autodist::graph
