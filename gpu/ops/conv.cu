// The data movement of Conv on CUDA around its matrix products (conv_kernel.cc): the whole
// batch's column matrix, its adjoint, and the swap between the products' channel-major layout
// [M, N, P] and the tensors' [N, M, P]. The taps come from window_geometry.h, as on the CPU.
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {
namespace {

// col [C * kH * kW, N * P]: element (row, n, p) is the input under tap row's (c, i, j) at output
// position p of image n, or zero in the padding.
__global__ void Im2ColKernel(const float* x, int64_t batch, int64_t channels, Window2d g,
                             float* col) {
  const int64_t pixels = g.out_size();
  const int64_t columns = batch * pixels;
  const int64_t total = channels * g.kernel_h * g.kernel_w * columns;
  for (int64_t e = First(); e < total; e += Stride()) {
    const int64_t row = e / columns;
    const int64_t column = e - row * columns;
    const int64_t n = column / pixels;
    const int64_t p = column - n * pixels;
    const int64_t kj = row % g.kernel_w;
    const int64_t ki = (row / g.kernel_w) % g.kernel_h;
    const int64_t c = row / (g.kernel_w * g.kernel_h);
    const int64_t oh = p / g.out_w;
    const int64_t ow = p - oh * g.out_w;
    const int64_t ih = oh * g.stride_h - g.pad_top + ki * g.dilation_h;
    const int64_t iw = ow * g.stride_w - g.pad_left + kj * g.dilation_w;
    const bool inside = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w;
    col[e] = inside ? x[((n * channels + c) * g.in_h + ih) * g.in_w + iw] : 0.0F;
  }
}

// dx (n, c, ih, iw) = Σ over the taps (i, j) that read it, row-major, of col's entry.
__global__ void Col2ImKernel(const float* col, int64_t batch, int64_t channels, Window2d g,
                             float* dx) {
  const int64_t pixels = g.out_size();
  const int64_t columns = batch * pixels;
  const int64_t total = batch * channels * g.in_size();
  for (int64_t e = First(); e < total; e += Stride()) {
    const int64_t iw = e % g.in_w;
    const int64_t ih = (e / g.in_w) % g.in_h;
    const int64_t c = (e / g.in_size()) % channels;
    const int64_t n = e / (channels * g.in_size());
    float sum = 0.0F;
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      const int64_t oh = ops::nn::OutputOfTap(ih, ki, g.stride_h, g.pad_top, g.dilation_h, g.out_h);
      if (oh < 0) continue;
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        const int64_t ow =
            ops::nn::OutputOfTap(iw, kj, g.stride_w, g.pad_left, g.dilation_w, g.out_w);
        if (ow < 0) continue;
        const int64_t row = (c * g.kernel_h + ki) * g.kernel_w + kj;
        sum += col[row * columns + n * pixels + oh * g.out_w + ow];
      }
    }
    dx[e] = sum;
  }
}

__global__ void SwapLeadingAxesKernel(const float* in, int64_t a, int64_t b, int64_t p,
                                      const float* bias, float* out) {
  const int64_t total = a * b * p;
  for (int64_t e = First(); e < total; e += Stride()) {  // e indexes out [B, A, P]
    const int64_t k = e % p;
    const int64_t i = (e / p) % a;
    const int64_t j = e / (a * p);
    const float value = in[(i * b + j) * p + k];
    out[e] = bias != nullptr ? value + bias[i] : value;
  }
}

}  // namespace

void LaunchIm2Col(const float* x, int64_t batch, int64_t channels, const Window2d& g, float* col,
                  cudaStream_t stream) {
  const int64_t total = channels * g.kernel_h * g.kernel_w * batch * g.out_size();
  if (total == 0) return;
  Im2ColKernel<<<Blocks(total), kThreads, 0, stream>>>(x, batch, channels, g, col);
}

void LaunchCol2Im(const float* col, int64_t batch, int64_t channels, const Window2d& g, float* dx,
                  cudaStream_t stream) {
  const int64_t total = batch * channels * g.in_size();
  if (total == 0) return;
  Col2ImKernel<<<Blocks(total), kThreads, 0, stream>>>(col, batch, channels, g, dx);
}

void LaunchSwapLeadingAxes(const float* in, int64_t a, int64_t b, int64_t p, const float* bias,
                           float* out, cudaStream_t stream) {
  const int64_t total = a * b * p;
  if (total == 0) return;
  SwapLeadingAxesKernel<<<Blocks(total), kThreads, 0, stream>>>(in, a, b, p, bias, out);
}

}  // namespace autodist::gpu::detail
