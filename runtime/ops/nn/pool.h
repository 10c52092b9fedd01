// The frame the 2-D window pooling kernels (AveragePool, MaxPool) share: the one input layout they
// accept, their window resolved against it, and the walk over planes and window positions. Each
// kernel supplies only what it computes from the taps of one window.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/ops/nn/window.h"
#include "runtime/ops/parallel.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ops::nn {

// The window of a pooling node (whose kernel_shape is required) resolved against an input of
// `shape` [N, C, H, W]. Backward calls it with the shape Forward saved, so as not to keep X alive.
WindowGeometry ResolvePoolWindow(const WindowAttributes& attributes, const tensor::Shape& shape,
                                 const std::string& what);

// Checks that X is float32 [N, C, H, W], the only pooling supported, and resolves the window
// against it; throws InvalidArgument naming `what` otherwise.
WindowGeometry ResolvePoolInput(const WindowAttributes& attributes, const tensor::Tensor& x,
                                const std::string& what);

// Calls fn(p) for every plane p in [0, planes), one (n, c) pair each, in parallel: planes are
// independent, and a chunk gets about 2^14 window taps so small inputs stay on one thread.
template <typename Fn>
void ForEachPlane(int64_t planes, const WindowGeometry& g, Fn&& fn) {
  const int64_t work = std::max<int64_t>(1, g.out_size() * g.kernel_h * g.kernel_w);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / work);
  ParallelFor(planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) fn(p);
  });
}

// One output position's window along one axis: its taps inside the input are first, first +
// dilation, ... below end (none when first >= end), and `padded` is the length it spans once
// clipped to the end padding (AveragePool's divisor with count_include_pad; it has no dilation).
struct WindowTaps {
  int64_t first;
  int64_t end;
  int64_t padded;
};

inline WindowTaps AxisTaps(int64_t out, int64_t stride, int64_t pad_begin, int64_t pad_end,
                           int64_t kernel, int64_t dilation, int64_t in) {
  const int64_t start = out * stride - pad_begin;
  const int64_t stop = start + (kernel - 1) * dilation + 1;
  // Taps in the begin padding are skipped whole dilation steps at a time, so the first one kept
  // is still on the window's grid.
  const int64_t first = start >= 0 ? start : start + (-start + dilation - 1) / dilation * dilation;
  return {first, std::min(stop, in), std::min(stop, in + pad_end) - start};
}

// Calls fn(o, rows, cols) for every output position o of one plane, in row-major order, with the
// taps of its window along H (rows) and W (cols).
template <typename Fn>
void ForEachWindow(const WindowGeometry& g, Fn&& fn) {
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const WindowTaps rows =
        AxisTaps(oh, g.stride_h, g.pad_top, g.pad_bottom, g.kernel_h, g.dilation_h, g.in_h);
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const WindowTaps cols =
          AxisTaps(ow, g.stride_w, g.pad_left, g.pad_right, g.kernel_w, g.dilation_w, g.in_w);
      fn(oh * g.out_w + ow, rows, cols);
    }
  }
}

}  // namespace autodist::ops::nn
