#include "runtime/exec/export.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <limits>

#include "runtime/common/durable_file.h"
#include "runtime/common/error.h"
#include "runtime/exec/initializer_value.h"
#include "runtime/graph/external_data.h"
#include "runtime/ops/onnx_tensor.h"

namespace autodist::exec {
namespace {

constexpr uint64_t kExternalAlignment = 4096;  // a page: onnxruntime maps aligned external data

uint64_t BytesOf(const onnx::TensorProto& initializer) {
  int64_t elements = 1;
  for (const int64_t dim : initializer.dims()) elements *= dim;
  const tensor::DType dtype = tensor::DTypeFromOnnx(initializer.data_type(), initializer.name());
  return static_cast<uint64_t>(elements) * tensor::ElementSize(dtype);
}

// The value an initializer is exported with: the trained one, else the model's own.
tensor::Tensor ValueOf(const onnx::TensorProto& initializer, const std::string& source,
                       const std::map<std::string, tensor::Tensor>& values) {
  const auto it = values.find(initializer.name());
  if (it != values.end()) {
    const tensor::Shape dims(initializer.dims().begin(), initializer.dims().end());
    AD_CHECK(dims == it->second.shape() &&
                 static_cast<int32_t>(it->second.dtype()) == initializer.data_type(),
             kInternal, "export: '{}' is {} {}, its initializer {} of type {}", it->first,
             tensor::DTypeName(it->second.dtype()), tensor::ShapeToString(it->second.shape()),
             tensor::ShapeToString(dims), initializer.data_type());
    return it->second;
  }
  return InitializerValue(initializer, source,
                          fmt::format("model '{}': initializer '{}'", source, initializer.name()));
}

void SetExternal(onnx::TensorProto& initializer, const std::string& location, uint64_t offset,
                 uint64_t length) {
  const std::string name = initializer.name();
  const int32_t data_type = initializer.data_type();
  const auto dims = initializer.dims();
  initializer.Clear();
  initializer.set_name(name);
  initializer.set_data_type(data_type);
  *initializer.mutable_dims() = dims;
  initializer.set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", location},
                                   {"offset", std::to_string(offset)},
                                   {"length", std::to_string(length)}}) {
    onnx::StringStringEntryProto* entry = initializer.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
}

void WriteModel(const onnx::ModelProto& model, const std::string& path) {
  const size_t size = model.ByteSizeLong();
  AD_CHECK(size <= static_cast<size_t>(std::numeric_limits<int32_t>::max()), kInvalidArgument,
           "export: the model is {} bytes, past protobuf's 2 GiB limit on one message; export it "
           "with external data",
           size);
  std::string bytes;
  AD_CHECK(model.SerializeToString(&bytes), kInternal, "cannot serialize the exported model");
  DurableFile file(path, bytes.size(), "exported model");
  file.Write(bytes.data(), bytes.size());
  file.Commit();
}

}  // namespace

void ExportModel(const onnx::ModelProto& model, const std::string& source,
                 const std::map<std::string, tensor::Tensor>& values, const std::string& path,
                 const ExportOptions& options) {
  onnx::ModelProto exported = model;
  auto& initializers = *exported.mutable_graph()->mutable_initializer();
  uint64_t total = 0;
  for (const onnx::TensorProto& initializer : initializers) total += BytesOf(initializer);
  if (!options.external_data && total <= options.external_threshold_bytes) {
    for (onnx::TensorProto& initializer : initializers) {
      if (!values.contains(initializer.name()) && !graph::IsExternalData(initializer)) continue;
      const std::string name = initializer.name();  // TensorToProto clears the proto first
      ops::TensorToProto(ValueOf(initializer, source, values), name, initializer);
    }
    WriteModel(exported, path);
    return;
  }
  const std::string data_path = path + ".data";
  const std::string location = std::filesystem::path(data_path).filename().string();
  uint64_t data_bytes = 0;
  for (const onnx::TensorProto& initializer : initializers) {
    const uint64_t bytes = BytesOf(initializer);
    if (bytes >= kExternalTensorMinBytes) {
      data_bytes = (data_bytes + kExternalAlignment - 1) / kExternalAlignment * kExternalAlignment;
      data_bytes += bytes;
    }
  }
  {
    DurableFile data(data_path, data_bytes, "exported model's data");
    for (onnx::TensorProto& initializer : initializers) {
      const uint64_t bytes = BytesOf(initializer);
      const bool external = bytes >= kExternalTensorMinBytes;
      if (!external && !values.contains(initializer.name()) &&
          !graph::IsExternalData(initializer)) {
        continue;  // small and unchanged: kept inline as it is
      }
      const tensor::Tensor value = ValueOf(initializer, source, values);
      if (!external) {
        const std::string name = initializer.name();  // TensorToProto clears the proto first
        ops::TensorToProto(value, name, initializer);
        continue;
      }
      data.PadTo(kExternalAlignment);
      SetExternal(initializer, location, data.position(), value.nbytes());
      data.Write(value.raw(), value.nbytes());  // little-endian, as ONNX's raw data
    }
    data.Commit();  // before the model that names it
  }
  WriteModel(exported, path);
}

}  // namespace autodist::exec
