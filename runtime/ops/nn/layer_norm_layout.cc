#include "runtime/ops/nn/layer_norm_layout.h"

#include <algorithm>

#include "runtime/common/error.h"

namespace autodist::ops::nn {

LayerNormAttributes ParseLayerNorm(const NodeInfo& node) {
  const int64_t stash_type = node.GetInt("stash_type", 1);
  AD_CHECK(stash_type == 1, kInvalidArgument, "{}: only stash_type 1 (float) is supported, got {}",
           node.Describe(), stash_type);
  return {node.GetInt("axis", -1), node.GetFloat("epsilon", 1e-5F)};
}

LayerNormLayout ResolveLayerNorm(int64_t axis, const tensor::Shape& shape,
                                 const std::string& what) {
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t resolved = axis < 0 ? axis + rank : axis;
  AD_CHECK(resolved >= 0 && resolved <= rank, kInvalidArgument,
           "{}: axis {} is out of range for X of rank {} ({})", what, axis, rank,
           tensor::ShapeToString(shape));
  LayerNormLayout l;
  l.axis = static_cast<size_t>(resolved);
  l.normalized.assign(shape.begin() + resolved, shape.end());
  l.size = tensor::NumElements(l.normalized);
  l.rows = l.size == 0 ? 0 : tensor::NumElements(shape) / l.size;
  l.stats_shape = shape;
  std::fill(l.stats_shape.begin() + resolved, l.stats_shape.end(), 1);
  return l;
}

void CheckLayerNormOperand(const tensor::Tensor& t, const LayerNormLayout& l, const char* name,
                           const std::string& what) {
  AD_CHECK(t.dtype() == tensor::DType::kFloat32, kInvalidArgument, "{}: {} must be float32, got {}",
           what, name, tensor::DTypeName(t.dtype()));
  bool fits = t.rank() <= l.normalized.size();
  for (size_t i = 0; fits && i < t.rank(); ++i) {
    const int64_t dim = t.dim(t.rank() - 1 - i);
    fits = dim == 1 || dim == l.normalized[l.normalized.size() - 1 - i];
  }
  AD_CHECK(fits, kInvalidArgument,
           "{}: {} of shape {} does not broadcast to the normalized shape {} (axis {})", what, name,
           tensor::ShapeToString(t.shape()), tensor::ShapeToString(l.normalized), l.axis);
}

}  // namespace autodist::ops::nn
