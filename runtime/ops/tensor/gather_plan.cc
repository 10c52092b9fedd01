#include "runtime/ops/tensor/gather_plan.h"

#include "runtime/common/error.h"
#include "runtime/ops/tensor/layout.h"

namespace autodist::ops {

GatherPlan PlanGather(const tensor::Shape& data, const tensor::Tensor& indices, int64_t axis,
                      const std::string& node) {
  AD_CHECK(!data.empty(), kInvalidArgument, "{}: cannot gather from a scalar", node);
  GatherPlan plan;
  plan.data_shape = data;
  plan.axis =
      static_cast<size_t>(NormalizeAxis(axis, static_cast<int64_t>(data.size()), node, "axis"));
  plan.dim = data[plan.axis];
  plan.indices = indices.ToInt64Vector(node + ": indices");
  for (int64_t& index : plan.indices) {
    AD_CHECK(index >= -plan.dim && index < plan.dim, kInvalidArgument,
             "{}: index {} is out of range for axis {} of length {} (data shape {})", node, index,
             plan.axis, plan.dim, tensor::ShapeToString(data));
    if (index < 0) index += plan.dim;
  }
  const auto at = static_cast<std::ptrdiff_t>(plan.axis);
  plan.output_shape.assign(data.begin(), data.begin() + at);
  plan.output_shape.insert(plan.output_shape.end(), indices.shape().begin(), indices.shape().end());
  plan.output_shape.insert(plan.output_shape.end(), data.begin() + at + 1, data.end());
  plan.outer = DimProduct(data, 0, plan.axis);
  plan.inner = DimProduct(data, plan.axis + 1, data.size());
  return plan;
}

}  // namespace autodist::ops
