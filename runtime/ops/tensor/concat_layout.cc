#include "runtime/ops/tensor/concat_layout.h"

#include "runtime/common/error.h"
#include "runtime/ops/tensor/layout.h"

namespace autodist::ops {

int64_t ParseConcatAxis(const NodeInfo& node) {
  AD_CHECK(node.HasAttribute("axis"), kInvalidArgument, "{}: attribute 'axis' is required",
           node.Describe());
  return node.GetInt("axis", 0);
}

ConcatLayout ResolveConcat(const ForwardContext& ctx, int64_t axis, const std::string& what) {
  AD_CHECK(ctx.num_inputs() > 0, kInvalidArgument, "{}: needs at least one input", what);
  const tensor::Tensor& first = ctx.input(0);
  AD_CHECK(first.rank() > 0, kInvalidArgument, "{}: cannot concatenate scalars", what);
  ConcatLayout layout;
  layout.axis =
      static_cast<size_t>(NormalizeAxis(axis, static_cast<int64_t>(first.rank()), what, "axis"));
  layout.shape = first.shape();
  layout.shape[layout.axis] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const tensor::Tensor& x = ctx.input(i);
    AD_CHECK(x.dtype() == first.dtype(), kInvalidArgument, "{}: input {} is {} but input 0 is {}",
             what, i, tensor::DTypeName(x.dtype()), tensor::DTypeName(first.dtype()));
    bool matches = x.rank() == first.rank();
    for (size_t d = 0; matches && d < x.rank(); ++d) {
      matches = d == layout.axis || x.dim(d) == first.dim(d);
    }
    AD_CHECK(matches, kInvalidArgument,
             "{}: input {} has shape {}, which does not match input 0 {} outside axis {}", what, i,
             tensor::ShapeToString(x.shape()), tensor::ShapeToString(first.shape()), layout.axis);
    layout.sizes.push_back(x.dim(layout.axis));
    layout.shape[layout.axis] += x.dim(layout.axis);
  }
  return layout;
}

}  // namespace autodist::ops
