#include "gpu/ops/pool_path.h"

#include <limits>

#include "gpu/ops/path_mode.h"

namespace autodist::gpu::pool {

namespace {

// The names AUTODIST_POOL_PATH takes, the default first.
constexpr detail::PathModeNames<PoolPathMode, 3> kPoolPathModeNames = {{
    {PoolPathMode::kMeasured, "measured"},
    {PoolPathMode::kOurs, "ours"},
    {PoolPathMode::kCudnn, "cudnn"},
}};

}  // namespace

PoolPathMode ParsePoolPathMode(const char* text) {
  return detail::ParsePathMode(kPoolPathEnv, text, kPoolPathModeNames);
}

std::string_view PoolPathModeName(PoolPathMode mode) {
  return detail::PathModeName(mode, kPoolPathModeNames);
}

std::string_view PoolPathName(PoolPath path) { return path == PoolPath::kCudnn ? "cudnn" : "ours"; }

std::string_view PoolDirectionName(PoolDirection direction) {
  return direction == PoolDirection::kBackward ? "backward" : "forward";
}

std::string_view PoolKindName(PoolKind kind) {
  switch (kind) {
    case PoolKind::kAverageExcludingPadding:
      return "average";
    case PoolKind::kAverageIncludingPadding:
      return "average including padding";
    case PoolKind::kMax:
      break;
  }
  return "max";
}

PoolShapeKey PoolShapeKeyOf(PoolKind kind, int64_t batch, int64_t channels,
                            const ops::nn::WindowGeometry& g, int device) {
  return PoolShapeKey{.device = device,
                      .kind = kind,
                      .batch = batch,
                      .channels = channels,
                      .height = g.in_h,
                      .width = g.in_w,
                      .out_height = g.out_h,
                      .out_width = g.out_w,
                      .kernel_h = g.kernel_h,
                      .kernel_w = g.kernel_w,
                      .stride_h = g.stride_h,
                      .stride_w = g.stride_w,
                      .pad_top = g.pad_top,
                      .pad_left = g.pad_left,
                      .pad_bottom = g.pad_bottom,
                      .pad_right = g.pad_right,
                      .dilation_h = g.dilation_h,
                      .dilation_w = g.dilation_w};
}

namespace {

// Whether one axis is cuDNN's: its begin padding on both ends, floored, gives the same windows,
// each holding an input element; with `whole_windows`, none runs past the end padding either.
bool AxisDescribed(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad_begin,
                   int64_t pad_end, bool whole_windows) {
  if (kernel <= 0 || stride <= 0 || pad_begin < 0 || pad_begin >= kernel || out <= 0) return false;
  const int64_t span = in + 2 * pad_begin - kernel;
  if (span < 0 || span / stride + 1 != out) return false;
  const int64_t last_stop = (out - 1) * stride - pad_begin + kernel;
  return !whole_windows || last_stop <= in + pad_end;
}

}  // namespace

bool CudnnDescribesPool(PoolKind kind, int64_t batch, int64_t channels,
                        const ops::nn::WindowGeometry& g) {
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (batch <= 0 || channels <= 0 || g.dilation_h != 1 || g.dilation_w != 1) return false;
  if (g.in_size() <= 0 || batch * channels > kIntMax / g.in_size()) return false;
  const bool whole = kind == PoolKind::kAverageIncludingPadding;
  return AxisDescribed(g.in_h, g.out_h, g.kernel_h, g.stride_h, g.pad_top, g.pad_bottom, whole) &&
         AxisDescribed(g.in_w, g.out_w, g.kernel_w, g.stride_w, g.pad_left, g.pad_right, whole);
}

bool CudnnMayTake(PoolKind kind, PoolDirection direction, bool needs_argmax) {
  if (kind != PoolKind::kMax) return true;
  return direction == PoolDirection::kForward && !needs_argmax;
}

PoolPath FasterPoolPath(std::optional<float> cudnn_ms, float ours_ms) {
  return cudnn_ms.has_value() && *cudnn_ms < ours_ms ? PoolPath::kCudnn : PoolPath::kOurs;
}

}  // namespace autodist::gpu::pool
