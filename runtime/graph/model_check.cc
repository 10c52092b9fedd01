#include "runtime/graph/model_check.h"

#include <onnx/checker.h>

#include <exception>
#include <string>

#include "runtime/common/error.h"
#include "runtime/graph/external_data.h"
#include "runtime/graph/initializers_as_inputs.h"
#include "runtime/graph/one_line.h"
#include "runtime/graph/shape_check.h"
#include "runtime/graph/weight_stripping.h"

namespace autodist::graph {
namespace {

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

void CheckOpset(const onnx::ModelProto& model, const std::string& source) {
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    AD_CHECK(!IsDefaultDomain(opset.domain()) || opset.version() <= kMaxDefaultOpset,
             kInvalidArgument,
             "model '{}' imports opset {} of the default ONNX domain; expected opset {} or older "
             "(re-export it with opset_version<={})",
             source, opset.version(), kMaxDefaultOpset, kMaxDefaultOpset);
  }
}

// The checker requires every initializer to hold exactly one data field, so a stripped one fails
// it; and it looks for external data relative to the current directory, not the model's. Filling
// in zeros would cost the full model size in memory (the reason to strip is that the model is
// large), so instead the copy checked turns each such initializer into a graph input of the same
// name, type and shape. That keeps every check on nodes, names, topology and types, and drops only
// the tensor-data checks: nothing to check without data, and CheckExternalData checks external
// references more strictly than the checker would.
bool NeedsInputForm(const onnx::TensorProto& tensor) {
  return !HasTensorData(tensor) || IsExternalData(tensor);
}

onnx::ModelProto InitializersWithoutDataAsInputs(const onnx::ModelProto& model) {
  onnx::ModelProto copy = model;  // cheap: such a model holds (almost) no tensor data inline
  copy.mutable_graph()->clear_initializer();
  AddInitializersOrInputs(model.graph(), *copy.mutable_graph(), NeedsInputForm);
  return copy;
}

bool HasExternalData(const onnx::ModelProto& model) {
  for (const onnx::TensorProto& tensor : model.graph().initializer()) {
    if (IsExternalData(tensor)) return true;
  }
  return false;
}

}  // namespace

void CheckModel(const onnx::ModelProto& model, const std::string& source) {
  CheckOpset(model, source);
  if (!IsWeightsStripped(model)) CheckExternalData(model, source);
  try {
    if (IsWeightsStripped(model) || HasExternalData(model)) {
      onnx::checker::check_model(InitializersWithoutDataAsInputs(model));
    } else {
      onnx::checker::check_model(model);
    }
  } catch (const std::exception& e) {
    Fail(ErrorCode::kInvalidArgument, "model '{}' fails the ONNX checker: {}", source,
         OneLine(e.what()));
  }
  CheckShapes(model, source);
}

}  // namespace autodist::graph
