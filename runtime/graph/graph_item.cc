#include "runtime/graph/graph_item.h"

#include <onnx/onnx_pb.h>

#include <utility>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/graph/gradient_names.h"
#include "runtime/graph/model_check.h"
#include "runtime/graph/variable_collection.h"
#include "runtime/graph/weight_stripping.h"

namespace autodist::graph {
namespace {

autodist::proto::VariableInfo ToVariableInfo(const Variable& variable) {
  autodist::proto::VariableInfo info;
  info.set_name(variable.name);
  for (const int64_t dim : variable.shape) info.add_shape(dim);
  info.set_data_type(variable.data_type);
  info.set_bytes(variable.bytes);
  info.set_sparse(variable.sparse);
  info.set_partitionable(variable.partitionable);
  info.set_trainable(variable.trainable);
  info.set_gradient_name(variable.gradient_name);
  return info;
}

}  // namespace

GraphItem GraphItem::FromOnnx(const onnx::ModelProto& model, const std::string& source) {
  CheckModel(model, source);
  GraphItem item;
  item.source_ = source;
  item.variables_ = CollectVariables(model.graph(), source);
  item.ops_ = OpsOf(model);
  AssignGradientNames(model.graph(), &item.variables_);
  for (const Variable& variable : item.variables_) {
    item.proto_.mutable_info()->add_variables()->PackFrom(ToVariableInfo(variable));
    if (!variable.gradient_name.empty()) {
      (*item.proto_.mutable_grad_target_pairs())[variable.gradient_name] = variable.name;
    }
  }
  item.proto_.mutable_graph_def()->PackFrom(model);
  return item;
}

GraphItem GraphItem::Load(const std::string& path) {
  return Parse(ReadFileBytes(path, "model"), path);
}

GraphItem GraphItem::Parse(const std::string& bytes, const std::string& source) {
  AD_CHECK(!bytes.empty(), kInvalidArgument,
           "'{}' is empty; expected an ONNX model or a serialized GraphItem", source);
  // A GraphItem is recognized by its packed model's type; an ONNX model's bytes never carry one
  // there (its field 1 is the varint ir_version, not a message). Its variable table is derived
  // again from the model rather than trusted.
  autodist::proto::GraphItem item;
  if (item.ParseFromString(bytes) && item.graph_def().Is<onnx::ModelProto>()) {
    onnx::ModelProto model;
    AD_CHECK(item.graph_def().UnpackTo(&model), kInvalidArgument,
             "GraphItem '{}': graph_def does not hold a valid onnx.ModelProto", source);
    return FromOnnx(model, source);
  }
  onnx::ModelProto model;
  const bool is_model = model.ParseFromString(bytes) && model.has_graph();
  AD_CHECK(is_model, kInvalidArgument,
           "'{}' is neither an ONNX model nor a GraphItem (expected a binary onnx.ModelProto "
           "with a graph, or an autodist.proto.GraphItem)",
           source);
  return FromOnnx(model, source);
}

std::vector<Variable> GraphItem::TrainableVariables() const {
  std::vector<Variable> trainable;
  for (const Variable& variable : variables_) {
    if (variable.trainable) trainable.push_back(variable);
  }
  return trainable;
}

autodist::proto::GraphItem GraphItem::ToProto(bool strip_weights) const {
  if (!strip_weights) return proto_;
  // Built field by field so the full weights are copied once (into `model`), not twice.
  autodist::proto::GraphItem stripped;
  *stripped.mutable_grad_target_pairs() = proto_.grad_target_pairs();
  *stripped.mutable_info() = proto_.info();
  onnx::ModelProto model;
  AD_CHECK(proto_.graph_def().UnpackTo(&model), kInternal,
           "GraphItem '{}': cannot unpack its own graph_def", source_);
  StripWeights(&model);
  stripped.mutable_graph_def()->PackFrom(model);
  return stripped;
}

}  // namespace autodist::graph
