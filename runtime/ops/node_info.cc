#include "runtime/ops/node_info.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "runtime/common/error.h"
#include "runtime/ops/onnx_tensor.h"

namespace autodist::ops {
namespace {

const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& attribute : node.attribute()) {
    if (attribute.name() == name) return &attribute;
  }
  return nullptr;
}

}  // namespace

NodeInfo::NodeInfo(const onnx::NodeProto& node, int64_t opset, Precision precision,
                   tensor::Device device)
    : node_(node), opset_(opset), precision_(precision), device_(device) {
  name_ = !node.name().empty()     ? node.name()
          : node.output_size() > 0 ? fmt::format("{} #{}", node.op_type(), node.output(0))
                                   : node.op_type();
}

const std::string& NodeInfo::op_type() const { return node_.op_type(); }

const tensor::Tensor* NodeInfo::ConstantInput(size_t i) const {
  const auto it = constant_inputs_.find(i);
  return it == constant_inputs_.end() ? nullptr : &it->second;
}

void NodeInfo::SetConstantInput(size_t i, tensor::Tensor value) {
  constant_inputs_[i] = std::move(value);
}
size_t NodeInfo::num_inputs() const { return static_cast<size_t>(node_.input_size()); }
size_t NodeInfo::num_outputs() const { return static_cast<size_t>(node_.output_size()); }
bool NodeInfo::has_input(size_t i) const {
  return i < num_inputs() && !node_.input(static_cast<int>(i)).empty();
}

bool NodeInfo::HasAttribute(const std::string& attribute) const {
  return FindAttribute(node_, attribute) != nullptr;
}

int64_t NodeInfo::GetInt(const std::string& attribute, int64_t default_value) const {
  const auto* found = FindAttribute(node_, attribute);
  if (found == nullptr) return default_value;
  AD_CHECK(found->type() == onnx::AttributeProto::INT, kInvalidArgument,
           "{}: attribute '{}' must be an int", Describe(), attribute);
  return found->i();
}

float NodeInfo::GetFloat(const std::string& attribute, float default_value) const {
  const auto* found = FindAttribute(node_, attribute);
  if (found == nullptr) return default_value;
  AD_CHECK(found->type() == onnx::AttributeProto::FLOAT, kInvalidArgument,
           "{}: attribute '{}' must be a float", Describe(), attribute);
  return found->f();
}

std::string NodeInfo::GetString(const std::string& attribute,
                                const std::string& default_value) const {
  const auto* found = FindAttribute(node_, attribute);
  if (found == nullptr) return default_value;
  AD_CHECK(found->type() == onnx::AttributeProto::STRING, kInvalidArgument,
           "{}: attribute '{}' must be a string", Describe(), attribute);
  return found->s();
}

std::vector<int64_t> NodeInfo::GetInts(const std::string& attribute,
                                       const std::vector<int64_t>& default_value) const {
  const auto* found = FindAttribute(node_, attribute);
  if (found == nullptr) return default_value;
  AD_CHECK(found->type() == onnx::AttributeProto::INTS, kInvalidArgument,
           "{}: attribute '{}' must be a list of ints", Describe(), attribute);
  return {found->ints().begin(), found->ints().end()};
}

std::vector<float> NodeInfo::GetFloats(const std::string& attribute,
                                       const std::vector<float>& default_value) const {
  const auto* found = FindAttribute(node_, attribute);
  if (found == nullptr) return default_value;
  AD_CHECK(found->type() == onnx::AttributeProto::FLOATS, kInvalidArgument,
           "{}: attribute '{}' must be a list of floats", Describe(), attribute);
  return {found->floats().begin(), found->floats().end()};
}

std::optional<tensor::Tensor> NodeInfo::GetTensor(const std::string& attribute) const {
  const auto* found = FindAttribute(node_, attribute);
  if (found == nullptr) return std::nullopt;
  AD_CHECK(found->type() == onnx::AttributeProto::TENSOR, kInvalidArgument,
           "{}: attribute '{}' must be a tensor", Describe(), attribute);
  return TensorFromProto(found->t(), fmt::format("{}: attribute '{}'", Describe(), attribute));
}

std::string NodeInfo::Describe() const {
  return fmt::format("{} node '{}' (opset {})", node_.op_type(), name_, opset_);
}

}  // namespace autodist::ops
