#include "gpu/ops/conv_path.h"

#include <limits>

#include "gpu/ops/path_mode.h"

namespace autodist::gpu::conv {

namespace {

// The names AUTODIST_CONV_PATH takes, the default first.
constexpr detail::PathModeNames<ConvPathMode, 3> kConvPathModeNames = {{
    {ConvPathMode::kMeasured, "measured"},
    {ConvPathMode::kIm2col, "im2col"},
    {ConvPathMode::kCudnn, "cudnn"},
}};

}  // namespace

ConvPathMode ParseConvPathMode(const char* text) {
  return detail::ParsePathMode(kConvPathEnv, text, kConvPathModeNames);
}

std::string_view ConvPathModeName(ConvPathMode mode) {
  return detail::PathModeName(mode, kConvPathModeNames);
}

std::string_view ConvPathName(ConvPath path) {
  return path == ConvPath::kCudnn ? "cudnn" : "im2col";
}

std::string_view ConvDirectionName(ConvDirection direction) {
  switch (direction) {
    case ConvDirection::kBackwardData:
      return "backward data";
    case ConvDirection::kBackwardFilter:
      return "backward filter";
    case ConvDirection::kForward:
      break;
  }
  return "forward";
}

ConvShapeKey ConvShapeKeyOf(const ops::nn::ConvGeometry& s, GemmMath math, int device) {
  const ops::nn::WindowGeometry& g = s.window;
  return ConvShapeKey{.device = device,
                      .batch = s.batch,
                      .channels = s.in_channels,
                      .height = g.in_h,
                      .width = g.in_w,
                      .out_channels = s.out_channels,
                      .kernel_h = g.kernel_h,
                      .kernel_w = g.kernel_w,
                      .stride_h = g.stride_h,
                      .stride_w = g.stride_w,
                      .pad_top = g.pad_top,
                      .pad_left = g.pad_left,
                      .pad_bottom = g.pad_bottom,
                      .pad_right = g.pad_right,
                      .dilation_h = g.dilation_h,
                      .dilation_w = g.dilation_w,
                      .group = s.group,
                      .math = math};
}

namespace {

// The output length of one axis padded by `pad` at both ends, as cuDNN computes it.
int64_t SymmetricOutput(int64_t in, int64_t pad, int64_t kernel, int64_t stride, int64_t dilation) {
  const int64_t span = in + 2 * pad - ((kernel - 1) * dilation + 1);
  return span < 0 ? 0 : span / stride + 1;
}

}  // namespace

bool CudnnDescribes(const ops::nn::ConvGeometry& s) {
  const ops::nn::WindowGeometry& g = s.window;
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  const bool fits = s.batch * s.in_image() <= kIntMax && s.batch * s.out_image() <= kIntMax &&
                    s.out_channels * s.taps <= kIntMax;
  return fits && s.batch > 0 && s.out_channels > 0 && s.taps > 0 && g.out_h > 0 && g.out_w > 0 &&
         SymmetricOutput(g.in_h, g.pad_top, g.kernel_h, g.stride_h, g.dilation_h) == g.out_h &&
         SymmetricOutput(g.in_w, g.pad_left, g.kernel_w, g.stride_w, g.dilation_w) == g.out_w;
}

ConvPath FasterPath(std::optional<float> cudnn_ms, float im2col_ms) {
  return cudnn_ms.has_value() && *cudnn_ms < im2col_ms ? ConvPath::kCudnn : ConvPath::kIm2col;
}

}  // namespace autodist::gpu::conv
