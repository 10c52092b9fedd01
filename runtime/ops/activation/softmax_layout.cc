#include "runtime/ops/activation/softmax_layout.h"

#include <algorithm>

#include "runtime/common/error.h"

namespace autodist::ops {

SoftmaxAxis ParseSoftmaxAxis(const NodeInfo& node) {
  SoftmaxAxis axis;
  axis.coerce_2d = node.opset() < 13;
  axis.axis = node.GetInt("axis", axis.coerce_2d ? 1 : -1);
  return axis;
}

SoftmaxLayout ResolveSoftmax(const SoftmaxAxis& axis, const tensor::Shape& shape,
                             const std::string& what) {
  const auto rank = static_cast<int64_t>(shape.size());
  // The 2-D view allows axis == rank (one row per element); a rank-0 input is one element.
  const int64_t limit = axis.coerce_2d ? rank : std::max<int64_t>(rank - 1, 0);
  const int64_t low = -std::max<int64_t>(rank, 1);
  AD_CHECK(axis.axis >= low && axis.axis <= limit, kInvalidArgument,
           "{}: axis {} is out of range for an input of rank {}", what, axis.axis, rank);
  const int64_t resolved = axis.axis < 0 ? axis.axis + rank : axis.axis;
  SoftmaxLayout l;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t dim = shape[static_cast<size_t>(i)];
    if (i < resolved) {
      l.outer *= dim;
    } else if (i == resolved || axis.coerce_2d) {
      l.n *= dim;
    } else {
      l.inner *= dim;
    }
  }
  return l;
}

}  // namespace autodist::ops
