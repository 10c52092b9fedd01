#include "runtime/graph/variable_collection.h"

#include <fmt/ranges.h>

#include <cstddef>
#include <optional>
#include <unordered_map>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/graph/weight_stripping.h"

namespace autodist::graph {
namespace {

// Bytes of data a float tensor holds inline: raw_data, or its typed field's values at the
// element size of its type.
int64_t StoredBytes(const onnx::TensorProto& tensor, int64_t element_size) {
  if (!tensor.raw_data().empty()) return static_cast<int64_t>(tensor.raw_data().size());
  switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      return tensor.float_data_size() * element_size;
    case onnx::TensorProto::DOUBLE:
      return tensor.double_data_size() * element_size;
    default:  // FLOAT16 and BFLOAT16 keep one value's bits per int32_data entry
      return tensor.int32_data_size() * element_size;
  }
}

Variable MakeVariable(const onnx::TensorProto& tensor, int64_t element_size,
                      const std::string& source) {
  Variable variable;
  variable.name = tensor.name();
  variable.data_type = tensor.data_type();
  for (int axis = 0; axis < tensor.dims_size(); ++axis) {
    AD_CHECK(tensor.dims(axis) >= 0, kInvalidArgument,
             "model '{}': initializer '{}' has dimension {} at axis {}; expected sizes >= 0",
             source, tensor.name(), tensor.dims(axis), axis);
    variable.shape.push_back(tensor.dims(axis));
  }
  const int64_t elements = NumElements(variable.shape);
  variable.bytes = elements * element_size;
  // External data lives in another file and a stripped tensor has none: nothing to compare.
  const bool inline_data = HasTensorData(tensor) && tensor.external_data_size() == 0 &&
                           tensor.data_location() != onnx::TensorProto::EXTERNAL;
  AD_CHECK(!inline_data || StoredBytes(tensor, element_size) == variable.bytes, kInvalidArgument,
           "model '{}': initializer '{}' holds {} bytes of data; its dims [{}] need {} elements "
           "({} bytes)",
           source, tensor.name(), StoredBytes(tensor, element_size),
           fmt::join(variable.shape, ", "), elements, variable.bytes);
  return variable;
}

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

bool IsOp(const onnx::NodeProto& node, const char* op_type) {
  return node.op_type() == op_type && IsDefaultDomain(node.domain());
}

bool IsControlFlow(const onnx::NodeProto& node) {
  return IsOp(node, "Loop") || IsOp(node, "If") || IsOp(node, "Scan");
}

int64_t IntAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == name) return attribute.i();
  }
  return fallback;
}

// What the uses of one variable (through its Identity aliases) add up to.
struct UseSummary {
  bool used = false;
  bool all_gather_rows = true;      // every use is Gather input 0 on axis 0
  bool all_batchnorm_state = true;  // every use is BatchNormalization input 3 or 4
  bool under_control_flow = false;  // read in a Loop/If/Scan body or fed to one
};

// Names visible at a point of the walk that denote a variable (the initializer itself or an
// Identity alias of it), mapped to the variable's index.
using Scope = std::unordered_map<std::string, size_t>;

class UseWalker {
 public:
  explicit UseWalker(const std::vector<Variable>& variables)
      : variables_(variables), uses_(variables.size()) {}

  // Walks the nodes of `graph` in order (ONNX graphs are topologically sorted), then its outputs.
  void Walk(const onnx::GraphProto& graph, Scope scope, bool in_control_flow) {
    for (const onnx::NodeProto& node : graph.node()) {
      std::optional<size_t> identity_of;
      for (int index = 0; index < node.input_size(); ++index) {
        const auto found = scope.find(node.input(index));
        if (found == scope.end()) continue;
        if (IsOp(node, "Identity")) {
          identity_of = found->second;  // not a use: its output's uses are the variable's
          if (in_control_flow) uses_[found->second].under_control_flow = true;
          continue;
        }
        RecordUse(found->second, node, index, in_control_flow);
      }
      for (const onnx::AttributeProto& attribute : node.attribute()) {
        const bool body_is_control_flow = in_control_flow || IsControlFlow(node);
        if (attribute.has_g()) WalkSubgraph(attribute.g(), scope, body_is_control_flow);
        for (const onnx::GraphProto& subgraph : attribute.graphs()) {
          WalkSubgraph(subgraph, scope, body_is_control_flow);
        }
      }
      for (const std::string& output : node.output()) Shadow(output, &scope);
      if (identity_of.has_value() && node.output_size() == 1) {
        scope[node.output(0)] = *identity_of;
      }
    }
    // A graph output that is a variable hands it to something we cannot see: not a row gather.
    for (const onnx::ValueInfoProto& output : graph.output()) {
      const auto found = scope.find(output.name());
      if (found == scope.end()) continue;
      UseSummary& summary = uses_[found->second];
      summary.used = true;
      summary.all_gather_rows = false;
      summary.all_batchnorm_state = false;
      if (in_control_flow) summary.under_control_flow = true;
    }
  }

  const std::vector<UseSummary>& uses() const { return uses_; }

 private:
  // A subgraph sees the outer names implicitly, except those it defines itself.
  void WalkSubgraph(const onnx::GraphProto& graph, Scope scope, bool in_control_flow) {
    for (const onnx::ValueInfoProto& input : graph.input()) Shadow(input.name(), &scope);
    for (const onnx::TensorProto& tensor : graph.initializer()) Shadow(tensor.name(), &scope);
    Walk(graph, std::move(scope), in_control_flow);
  }

  // A subgraph (or, in a malformed graph, a node) redefining a name hides the outer tensor.
  static void Shadow(const std::string& name, Scope* scope) { scope->erase(name); }

  void RecordUse(size_t variable, const onnx::NodeProto& node, int input_index,
                 bool in_control_flow) {
    UseSummary& summary = uses_[variable];
    summary.used = true;
    if (in_control_flow || IsControlFlow(node)) summary.under_control_flow = true;
    summary.all_gather_rows &= input_index == 0 && IsOp(node, "Gather") &&
                               NormalizedAxis(IntAttribute(node, "axis", 0), variable) == 0;
    summary.all_batchnorm_state &=
        (input_index == 3 || input_index == 4) && IsOp(node, "BatchNormalization");
  }

  // Gather accepts axis in [-rank, rank); -rank is axis 0.
  int64_t NormalizedAxis(int64_t axis, size_t variable) const {
    return axis < 0 ? axis + static_cast<int64_t>(variables_[variable].shape.size()) : axis;
  }

  const std::vector<Variable>& variables_;
  std::vector<UseSummary> uses_;
};

}  // namespace

std::vector<Variable> CollectVariables(const onnx::GraphProto& graph, const std::string& source) {
  std::vector<Variable> variables;
  Scope scope;
  for (const onnx::TensorProto& tensor : graph.initializer()) {
    const int64_t element_size = FloatElementSize(tensor.data_type());
    if (element_size == 0) continue;  // int64 shapes, bool flags...: constants, not variables
    const bool fresh = scope.emplace(tensor.name(), variables.size()).second;
    AD_CHECK(fresh, kInvalidArgument, "model '{}': initializer '{}' is defined more than once",
             source, tensor.name());
    variables.push_back(MakeVariable(tensor, element_size, source));
  }

  // The main graph's inputs do not shadow: one named like an initializer (IR version < 4) is
  // that initializer.
  UseWalker walker(variables);
  walker.Walk(graph, std::move(scope), /*in_control_flow=*/false);

  for (size_t i = 0; i < variables.size(); ++i) {
    const UseSummary& use = walker.uses()[i];
    variables[i].sparse = use.used && use.all_gather_rows;
    variables[i].partitionable = !use.under_control_flow;
    variables[i].trainable = !(use.used && use.all_batchnorm_state);
  }
  return variables;
}

}  // namespace autodist::graph
