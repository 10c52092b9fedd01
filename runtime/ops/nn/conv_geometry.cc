#include "runtime/ops/nn/conv_geometry.h"

#include <vector>

#include "runtime/common/error.h"

namespace autodist::ops::nn {

ConvGeometry ResolveConv(const WindowAttributes& attributes, int64_t group, const tensor::Tensor& x,
                         const tensor::Tensor& w, const std::string& what) {
  AD_CHECK(x.rank() == 4, kInvalidArgument,
           "{}: only 2-D convolution is supported: X must be [N, C, H, W], got {}", what,
           tensor::ShapeToString(x.shape()));
  AD_CHECK(w.rank() == 4, kInvalidArgument,
           "{}: only 2-D convolution is supported: W must be [M, C/group, kH, kW], got {}", what,
           tensor::ShapeToString(w.shape()));
  AD_CHECK(x.dtype() == tensor::DType::kFloat32 && w.dtype() == tensor::DType::kFloat32,
           kInvalidArgument, "{}: X and W must be float32, got {} and {}", what,
           tensor::DTypeName(x.dtype()), tensor::DTypeName(w.dtype()));
  ConvGeometry s;
  s.batch = x.dim(0);
  s.in_channels = x.dim(1);
  s.out_channels = w.dim(0);
  s.group = group;
  AD_CHECK(w.dim(1) * group == s.in_channels, kInvalidArgument,
           "{}: X has {} channels but W {} with group {} expects {}", what, s.in_channels,
           tensor::ShapeToString(w.shape()), group, w.dim(1) * group);
  AD_CHECK(s.out_channels % group == 0, kInvalidArgument,
           "{}: W has {} output channels, not divisible by group {}", what, s.out_channels, group);
  if (!attributes.kernel_shape.empty()) {
    AD_CHECK(attributes.kernel_shape == std::vector<int64_t>({w.dim(2), w.dim(3)}),
             kInvalidArgument, "{}: kernel_shape [{}, {}] differs from W {}", what,
             attributes.kernel_shape[0], attributes.kernel_shape[1],
             tensor::ShapeToString(w.shape()));
  }
  s.group_in = w.dim(1);
  s.group_out = s.out_channels / group;
  s.window = ResolveWindow(attributes, x.dim(2), x.dim(3), w.dim(2), w.dim(3), what);
  s.taps = s.group_in * w.dim(2) * w.dim(3);
  return s;
}

void CheckConvBias(const tensor::Tensor& b, int64_t out_channels, const std::string& what) {
  AD_CHECK(b.dtype() == tensor::DType::kFloat32 && b.shape() == tensor::Shape{out_channels},
           kInvalidArgument, "{}: B must be float32 [{}] (one per output channel), got {} {}", what,
           out_channels, tensor::DTypeName(b.dtype()), tensor::ShapeToString(b.shape()));
}

int64_t ParseConvGroup(const NodeInfo& node) {
  const int64_t group = node.GetInt("group", 1);
  AD_CHECK(group >= 1, kInvalidArgument, "{}: group must be >= 1, got {}", node.Describe(), group);
  return group;
}

}  // namespace autodist::ops::nn
