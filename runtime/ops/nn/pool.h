// The frame the 2-D window pooling kernels (AveragePool, MaxPool) share: the one input layout they
// accept, their window resolved against it, and the walk over planes and window positions. Each
// kernel supplies only what it computes from the taps of one window.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/ops/nn/window.h"
#include "runtime/ops/nn/window_geometry.h"
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

// Calls fn(o, rows, cols) for every output position o of one plane, in row-major order, with the
// taps of its window along H (rows) and W (cols).
template <typename Fn>
void ForEachWindow(const WindowGeometry& g, Fn&& fn) {
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const WindowTaps rows = RowTaps(g, oh);
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const WindowTaps cols = ColumnTaps(g, ow);
      fn(oh * g.out_w + ow, rows, cols);
    }
  }
}

}  // namespace autodist::ops::nn
