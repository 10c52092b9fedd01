#include "runtime/ops/tensor/slice_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "runtime/common/error.h"
#include "runtime/ops/tensor/layout.h"

namespace autodist::ops {

SlicePlan PlanSlice(const tensor::Shape& input, const std::vector<int64_t>& starts,
                    const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                    std::vector<int64_t> steps, const std::string& node) {
  const auto rank = static_cast<int64_t>(input.size());
  if (axes.empty()) {
    for (size_t j = 0; j < starts.size(); ++j) axes.push_back(static_cast<int64_t>(j));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  AD_CHECK(
      ends.size() == starts.size() && axes.size() == starts.size() && steps.size() == starts.size(),
      kInvalidArgument,
      "{}: starts, ends, axes and steps must have equal lengths, got {}, {}, {} and {}", node,
      starts.size(), ends.size(), axes.size(), steps.size());
  const std::vector<int64_t> in_strides = tensor::Strides(input);
  SlicePlan plan;
  plan.input_shape = input;
  plan.output_shape = input;
  plan.strides = in_strides;
  std::vector<bool> seen(input.size(), false);
  for (size_t j = 0; j < starts.size(); ++j) {
    const auto axis = static_cast<size_t>(NormalizeAxis(axes[j], rank, node, "axis"));
    AD_CHECK(!seen[axis], kInvalidArgument, "{}: axes [{}] name axis {} twice", node,
             fmt::join(axes, ", "), axis);
    seen[axis] = true;
    AD_CHECK(steps[j] != 0, kInvalidArgument, "{}: steps [{}] contain a 0", node,
             fmt::join(steps, ", "));
    const int64_t dim = input[axis];
    // A step longer than the axis takes one element at most, so bounding it changes nothing and
    // keeps the arithmetic below from overflowing.
    const int64_t step =
        std::clamp(steps[j], -std::max<int64_t>(dim, 1), std::max<int64_t>(dim, 1));
    int64_t start = starts[j] < 0 ? starts[j] + dim : starts[j];
    int64_t end = ends[j] < 0 ? ends[j] + dim : ends[j];
    int64_t count = 0;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end - step - 1) / -step : 0;
    }
    plan.output_shape[axis] = count;
    plan.offset += start * in_strides[axis];
    plan.strides[axis] = in_strides[axis] * step;
  }
  plan.whole = plan.output_shape == input && plan.offset == 0 && plan.strides == in_strides;
  return plan;
}

std::vector<int64_t> SliceList(const ForwardContext& ctx, size_t i, const char* name) {
  const tensor::Tensor& list = ctx.input(i);
  AD_CHECK(list.rank() == 1, kInvalidArgument, "{}: {} must be 1-D, got shape {}", ctx.Describe(),
           name, tensor::ShapeToString(list.shape()));
  return list.ToInt64Vector(fmt::format("{}: {}", ctx.Describe(), name));
}

}  // namespace autodist::ops
