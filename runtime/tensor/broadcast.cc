#include "runtime/tensor/broadcast.h"

#include <algorithm>

#include "runtime/common/error.h"

namespace autodist::tensor {

Shape BroadcastShapes(const Shape& a, const Shape& b, const std::string& what) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    AD_CHECK(da == db || da == 1 || db == 1, kInvalidArgument,
             "{}: shapes {} and {} cannot be broadcast together", what, ShapeToString(a),
             ShapeToString(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> BroadcastStrides(const Shape& shape, const Shape& out_shape) {
  const size_t rank = out_shape.size();
  std::vector<int64_t> strides(rank, 0);
  const std::vector<int64_t> own = Strides(shape);
  const size_t offset = rank - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    strides[offset + i] = shape[i] == 1 ? 0 : own[i];
  }
  return strides;
}

Tensor ReduceToShape(const Tensor& grad, const Shape& target) {
  if (grad.shape() == target) return grad;
  Tensor out = Tensor::Zeros(DType::kFloat32, target);
  const std::vector<int64_t> strides = BroadcastStrides(target, grad.shape());
  const std::vector<int64_t> none(grad.rank(), 0);
  const float* g = grad.data<float>();
  float* o = out.data<float>();
  ForEachBroadcast(grad.shape(), strides, none, [&](int64_t index, int64_t target_index, int64_t) {
    o[target_index] += g[index];
  });
  return out;
}

}  // namespace autodist::tensor
