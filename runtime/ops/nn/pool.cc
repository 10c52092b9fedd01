#include "runtime/ops/nn/pool.h"

#include "runtime/common/error.h"

namespace autodist::ops::nn {

WindowGeometry ResolvePoolWindow(const WindowAttributes& attributes, const tensor::Shape& shape,
                                 const std::string& what) {
  return ResolveWindow(attributes, shape[2], shape[3], attributes.kernel_shape[0],
                       attributes.kernel_shape[1], what);
}

WindowGeometry ResolvePoolInput(const WindowAttributes& attributes, const tensor::Tensor& x,
                                const std::string& what) {
  AD_CHECK(x.rank() == 4 && x.dtype() == tensor::DType::kFloat32, kInvalidArgument,
           "{}: only 2-D pooling is supported: X must be float32 [N, C, H, W], got {} {}", what,
           tensor::DTypeName(x.dtype()), tensor::ShapeToString(x.shape()));
  return ResolvePoolWindow(attributes, x.shape(), what);
}

}  // namespace autodist::ops::nn
