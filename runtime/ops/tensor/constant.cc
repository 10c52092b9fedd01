// Constant: no inputs; the output is the tensor of exactly one value attribute — `value` (a
// tensor), or from opset 12 `value_float`/`value_floats` (float32 scalar / 1-D) and
// `value_int`/`value_ints` (int64 scalar / 1-D). Parsed once; every run returns the same
// (never written) tensor.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/constant_value.h"

namespace autodist::ops {

Tensor ConstantValue(const NodeInfo& node) {
  for (const char* unsupported : {"sparse_value", "value_string", "value_strings"}) {
    AD_CHECK(!node.HasAttribute(unsupported), kInvalidArgument,
             "{}: attribute '{}' is not supported (numeric tensors only)", node.Describe(),
             unsupported);
  }
  std::vector<std::string> given;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints"}) {
    if (node.HasAttribute(name)) given.emplace_back(name);
  }
  AD_CHECK(given.size() == 1, kInvalidArgument,
           "{}: exactly one of value, value_float, value_floats, value_int, value_ints must be "
           "set, got [{}]",
           node.Describe(), fmt::join(given, ", "));
  const std::string& name = given.front();
  if (name == "value") return *node.GetTensor("value");
  if (name == "value_float") return Tensor::Scalar(node.GetFloat(name, 0.0F));
  if (name == "value_int") return Tensor::FromVector<int64_t>({}, {node.GetInt(name, 0)});
  if (name == "value_floats") {
    const std::vector<float> values = node.GetFloats(name, {});
    return Tensor::FromVector<float>({static_cast<int64_t>(values.size())}, values);
  }
  const std::vector<int64_t> values = node.GetInts(name, {});
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

namespace {

class ConstantKernel final : public OpKernel {
 public:
  explicit ConstantKernel(const NodeInfo& node) : OpKernel(node), value_(ConstantValue(node)) {}

  void Forward(ForwardContext& ctx) const override { ctx.set_output(0, value_); }

 private:
  Tensor value_;
};

AUTODIST_REGISTER_KERNEL(Constant, 1, 17, ConstantKernel);

}  // namespace
}  // namespace autodist::ops
