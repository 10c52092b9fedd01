#include "runtime/ops/math/reduce_plan.h"

#include "runtime/common/error.h"

namespace autodist::ops {

ReducePlan MakeReducePlan(const tensor::Shape& shape, std::vector<int64_t> axes, bool keepdims,
                          bool noop_with_empty_axes, const std::string& describe) {
  ReducePlan plan;
  plan.input_shape = shape;
  const auto rank = static_cast<int64_t>(shape.size());
  if (axes.empty()) {
    if (noop_with_empty_axes) {
      plan.identity = true;
      plan.kept_shape = plan.out_shape = shape;
      return plan;
    }
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t& axis : axes) {
    AD_CHECK(axis >= -rank && axis < rank, kInvalidArgument,
             "{}: axis {} is out of range for an input of rank {}", describe, axis, rank);
    if (axis < 0) axis += rank;
    AD_CHECK(!reduced[static_cast<size_t>(axis)], kInvalidArgument, "{}: axis {} appears twice",
             describe, axis);
    reduced[static_cast<size_t>(axis)] = true;
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (reduced[i]) {
      plan.count *= shape[i];
      plan.kept_shape.push_back(1);
      if (keepdims) plan.out_shape.push_back(1);
    } else {
      plan.kept_shape.push_back(shape[i]);
      plan.out_shape.push_back(shape[i]);
    }
  }
  return plan;
}

ReduceAttributes::ReduceAttributes(const NodeInfo& node, bool sum)
    : keepdims_(node.GetInt("keepdims", 1) != 0),
      axes_from_input_(sum && node.opset() >= 13),
      noop_with_empty_axes_(axes_from_input_ && node.GetInt("noop_with_empty_axes", 0) != 0),
      axes_(node.GetInts("axes", {})) {
  AD_CHECK(!(axes_from_input_ && node.HasAttribute("axes")), kInvalidArgument,
           "{}: from opset 13 the axes of ReduceSum are input 1, not an attribute",
           node.Describe());
}

ReducePlan ReduceAttributes::Plan(const ForwardContext& ctx, const std::string& describe) const {
  std::vector<int64_t> axes = axes_;
  if (axes_from_input_ && ctx.has_input(1)) axes = ctx.input(1).ToInt64Vector(describe + ": axes");
  return MakeReducePlan(ctx.input(0).shape(), std::move(axes), keepdims_, noop_with_empty_axes_,
                        describe);
}

}  // namespace autodist::ops
