// The kernels of MaxPool on CUDA: one thread per output for the maxima (window_geometry.h's
// MaxOfWindow, the CPU's own code), one per input element for the gradient, which gathers the
// outputs whose argmax it is in output order, as the CPU adds them, without atomics.
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {
namespace {

__global__ void MaxPoolKernel(const float* x, int64_t planes, Window2d g, float* y,
                              int32_t* argmax) {
  const int64_t total = planes * g.out_size();
  for (int64_t e = First(); e < total; e += Stride()) {
    const int64_t plane = e / g.out_size();
    const int64_t o = e - plane * g.out_size();
    const int64_t oh = o / g.out_w;
    const ops::nn::WindowMax best = ops::nn::MaxOfWindow(
        x + plane * g.in_size(), g, ops::nn::RowTaps(g, oh), ops::nn::ColumnTaps(g, o % g.out_w));
    y[e] = best.value;
    argmax[e] = static_cast<int32_t>(best.index);
  }
}

__global__ void IndicesKernel(const int32_t* argmax, int64_t planes, Window2d g, bool column_major,
                              int64_t* indices) {
  const int64_t total = planes * g.out_size();
  for (int64_t e = First(); e < total; e += Stride()) {
    const int64_t local = argmax[e];
    if (local < 0) {
      indices[e] = -1;
      continue;
    }
    const int64_t plane_offset = (e / g.out_size()) * g.in_size();
    indices[e] = plane_offset + (column_major ? (local % g.in_w) * g.in_h + local / g.in_w : local);
  }
}

__global__ void MaxPoolGradKernel(const float* dy, const int32_t* argmax, int64_t planes,
                                  Window2d g, float* dx) {
  const int64_t total = planes * g.in_size();
  for (int64_t e = First(); e < total; e += Stride()) {
    const int64_t plane = e / g.in_size();
    const int64_t local = e - plane * g.in_size();
    const int64_t ih = local / g.in_w;
    const int64_t iw = local - ih * g.in_w;
    const int64_t base = plane * g.out_size();
    float sum = 0.0F;
    // Taps from the last to the first give the outputs in increasing order.
    for (int64_t ki = g.kernel_h - 1; ki >= 0; --ki) {
      const int64_t oh = ops::nn::OutputOfTap(ih, ki, g.stride_h, g.pad_top, g.dilation_h, g.out_h);
      if (oh < 0) continue;
      for (int64_t kj = g.kernel_w - 1; kj >= 0; --kj) {
        const int64_t ow =
            ops::nn::OutputOfTap(iw, kj, g.stride_w, g.pad_left, g.dilation_w, g.out_w);
        if (ow < 0) continue;
        const int64_t o = base + oh * g.out_w + ow;
        if (argmax[o] == local) sum += dy[o];
      }
    }
    dx[e] = sum;
  }
}

}  // namespace

void LaunchMaxPool(const float* x, int64_t planes, const Window2d& g, float* y, int32_t* argmax,
                   cudaStream_t stream) {
  const int64_t total = planes * g.out_size();
  if (total == 0) return;
  MaxPoolKernel<<<Blocks(total), kThreads, 0, stream>>>(x, planes, g, y, argmax);
}

void LaunchMaxPoolIndices(const int32_t* argmax, int64_t planes, const Window2d& g,
                          bool column_major, int64_t* indices, cudaStream_t stream) {
  const int64_t total = planes * g.out_size();
  if (total == 0) return;
  IndicesKernel<<<Blocks(total), kThreads, 0, stream>>>(argmax, planes, g, column_major, indices);
}

void LaunchMaxPoolGrad(const float* dy, const int32_t* argmax, int64_t planes, const Window2d& g,
                       float* dx, cudaStream_t stream) {
  const int64_t total = planes * g.in_size();
  if (total == 0) return;
  MaxPoolGradKernel<<<Blocks(total), kThreads, 0, stream>>>(dy, argmax, planes, g, dx);
}

}  // namespace autodist::gpu::detail
