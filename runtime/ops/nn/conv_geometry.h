// The shapes of a 2-D Conv node resolved against its inputs, for the kernels of every backend:
// X [N, C, H, W], W [M, C/group, kH, kW], optional B [M], checked once with the errors a user
// sees ("only 2-D convolution is supported", channels that disagree with group, ...).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/ops/nn/window.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ops::nn {

struct ConvGeometry {
  int64_t batch = 0;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t group = 1;
  int64_t group_in = 0;   // C / group
  int64_t group_out = 0;  // M / group
  int64_t taps = 0;       // group_in * kH * kW: the inner dimension of every GEMM
  WindowGeometry window;

  int64_t pixels() const { return window.out_size(); }
  int64_t in_image() const { return in_channels * window.in_size(); }
  int64_t out_image() const { return out_channels * pixels(); }
  // Column-matrix rows of one input channel times their length, for one image.
  int64_t channel_columns() const { return window.kernel_h * window.kernel_w * pixels(); }
};

// Checks X and W (float32, rank 4, channels and kernel_shape consistent with W and `group`) and
// resolves the window; throws InvalidArgument naming `what` otherwise.
ConvGeometry ResolveConv(const WindowAttributes& attributes, int64_t group, const tensor::Tensor& x,
                         const tensor::Tensor& w, const std::string& what);

// Checks the bias B: float32 [M].
void CheckConvBias(const tensor::Tensor& b, int64_t out_channels, const std::string& what);

// Parses the node's `group` (at least 1).
int64_t ParseConvGroup(const NodeInfo& node);

}  // namespace autodist::ops::nn
