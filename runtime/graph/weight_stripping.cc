#include "runtime/graph/weight_stripping.h"

#include <string>

#include "runtime/graph/graph_item.h"

namespace autodist::graph {

bool HasTensorData(const onnx::TensorProto& tensor) {
  return !tensor.raw_data().empty() || tensor.float_data_size() > 0 ||
         tensor.int32_data_size() > 0 || tensor.string_data_size() > 0 ||
         tensor.int64_data_size() > 0 || tensor.double_data_size() > 0 ||
         tensor.uint64_data_size() > 0 || tensor.external_data_size() > 0 ||
         tensor.data_location() == onnx::TensorProto::EXTERNAL;
}

bool IsWeightsStripped(const onnx::ModelProto& model) {
  for (const onnx::StringStringEntryProto& entry : model.metadata_props()) {
    if (entry.key() == kWeightsStrippedKey) return entry.value() == "true";
  }
  return false;
}

void StripWeights(onnx::ModelProto* model) {
  // Only the main graph: its initializers are the variables (what makes a model large); the
  // initializers of Loop/If/Scan bodies are small constants the graph's meaning depends on.
  for (onnx::TensorProto& tensor : *model->mutable_graph()->mutable_initializer()) {
    tensor.clear_raw_data();
    tensor.clear_float_data();
    tensor.clear_int32_data();
    tensor.clear_string_data();
    tensor.clear_int64_data();
    tensor.clear_double_data();
    tensor.clear_uint64_data();
    tensor.clear_external_data();
    tensor.clear_data_location();
  }
  for (onnx::StringStringEntryProto& entry : *model->mutable_metadata_props()) {
    if (entry.key() == kWeightsStrippedKey) {
      entry.set_value("true");
      return;
    }
  }
  onnx::StringStringEntryProto* entry = model->add_metadata_props();
  entry->set_key(kWeightsStrippedKey);
  entry->set_value("true");
}

}  // namespace autodist::graph
