// The data movement of Conv on CUDA around its matrix products (conv_kernel.cc): the column
// matrix of a chunk of images, its adjoint, and the swap between the products' channel-major
// layout [M, b, P] and the tensors' [b, M, P] (adding the bias on the way forward). The taps come
// from window_geometry.h, as on the CPU. Indices are 32-bit where they fit (FitsUint32): these
// kernels divide to find an element's coordinates.
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {
namespace {

// col [C * kH * kW, N * P]: element (row, n, p) is the input under tap row's (c, i, j) at output
// position p of image n, or zero in the padding. A thread takes one column (n, p) of one channel
// and writes its kH * kW rows (each row's writes are consecutive across threads); one channel per
// grid row.
template <typename Index>
__global__ void Im2ColKernel(const float* x, Index batch, Index channels, Window2d g, float* col) {
  const auto pixels = static_cast<Index>(g.out_size());
  const Index columns = batch * pixels;
  const int kernel_h = static_cast<int>(g.kernel_h);
  const int kernel_w = static_cast<int>(g.kernel_w);
  const auto out_w = static_cast<Index>(g.out_w);
  const int in_h = static_cast<int>(g.in_h);
  const int in_w = static_cast<int>(g.in_w);
  const int dilation_h = static_cast<int>(g.dilation_h);
  const int dilation_w = static_cast<int>(g.dilation_w);
  for (Index c = blockIdx.y; c < channels; c += gridDim.y) {
    float* rows = col + static_cast<int64_t>(c) * kernel_h * kernel_w * columns;
    for (Index column = blockIdx.x * blockDim.x + threadIdx.x; column < columns;
         column += gridDim.x * blockDim.x) {
      const Index n = column / pixels;
      const Index p = column - n * pixels;
      const Index oh = p / out_w;
      const Index ow = p - oh * out_w;
      const int top = static_cast<int>(oh * g.stride_h - g.pad_top);
      const int left = static_cast<int>(ow * g.stride_w - g.pad_left);
      const float* plane = x + static_cast<int64_t>(n * channels + c) * in_h * in_w;
      float* out = rows + column;
      for (int ki = 0; ki < kernel_h; ++ki) {
        const int ih = top + ki * dilation_h;
        const bool row_inside = ih >= 0 && ih < in_h;
        for (int kj = 0; kj < kernel_w; ++kj) {
          const int iw = left + kj * dilation_w;
          *out = row_inside && iw >= 0 && iw < in_w ? plane[ih * in_w + iw] : 0.0F;
          out += columns;
        }
      }
    }
  }
}

// dx (n, c, ih, iw) = Σ over the taps (i, j) that read it, row-major, of col's entry: the CPU's
// order. One (n, c) plane per grid row.
template <typename Index>
__global__ void Col2ImKernel(const float* col, Index batch, Index channels, Window2d g, float* dx) {
  const auto pixels = static_cast<Index>(g.out_size());
  const Index columns = batch * pixels;
  const auto in_w = static_cast<Index>(g.in_w);
  const auto plane_size = static_cast<Index>(g.in_size());
  const int kernel_h = static_cast<int>(g.kernel_h);
  const int kernel_w = static_cast<int>(g.kernel_w);
  const int out_h = static_cast<int>(g.out_h);
  const int out_w = static_cast<int>(g.out_w);
  const int stride_h = static_cast<int>(g.stride_h);
  const int stride_w = static_cast<int>(g.stride_w);
  const int pad_top = static_cast<int>(g.pad_top);
  const int pad_left = static_cast<int>(g.pad_left);
  const int dilation_h = static_cast<int>(g.dilation_h);
  const int dilation_w = static_cast<int>(g.dilation_w);
  for (Index plane = blockIdx.y; plane < batch * channels; plane += gridDim.y) {
    const Index n = plane / channels;
    const Index c = plane - n * channels;
    float* out = dx + static_cast<int64_t>(plane) * plane_size;
    for (Index e = blockIdx.x * blockDim.x + threadIdx.x; e < plane_size;
         e += gridDim.x * blockDim.x) {
      const Index ih = e / in_w;
      const Index iw = e - ih * in_w;
      float sum = 0.0F;
      for (int ki = 0; ki < kernel_h; ++ki) {
        const int oh = ops::nn::OutputOfTap<int>(static_cast<int>(ih), ki, stride_h, pad_top,
                                                 dilation_h, out_h);
        if (oh < 0) continue;
        for (int kj = 0; kj < kernel_w; ++kj) {
          const int ow = ops::nn::OutputOfTap<int>(static_cast<int>(iw), kj, stride_w, pad_left,
                                                   dilation_w, out_w);
          if (ow < 0) continue;
          const auto row = static_cast<int64_t>((c * kernel_h + ki) * kernel_w + kj);
          sum += col[row * columns + n * pixels + oh * out_w + ow];
        }
      }
      out[e] = sum;
    }
  }
}

// out [B, A, P] from in [A, B, P], plus bias[a] where not null: one (b, a) row of P per grid row.
template <typename Index>
__global__ void SwapLeadingAxesKernel(const float* in, Index a, Index b, Index p, const float* bias,
                                      float* out) {
  for (Index row = blockIdx.y; row < a * b; row += gridDim.y) {  // row = j * a + i in out
    const Index j = row / a;
    const Index i = row - j * a;
    const float* source = in + static_cast<int64_t>(i * b + j) * p;
    float* target = out + static_cast<int64_t>(row) * p;
    if (bias == nullptr) {
      for (Index k = blockIdx.x * blockDim.x + threadIdx.x; k < p; k += gridDim.x * blockDim.x) {
        target[k] = source[k];
      }
    } else {
      const float add = bias[i];
      for (Index k = blockIdx.x * blockDim.x + threadIdx.x; k < p; k += gridDim.x * blockDim.x) {
        target[k] = source[k] + add;
      }
    }
  }
}

}  // namespace

void LaunchIm2Col(const float* x, int64_t batch, int64_t channels, const Window2d& g, float* col,
                  cudaStream_t stream) {
  const int64_t rows = channels * g.kernel_h * g.kernel_w;
  const int64_t columns = batch * g.out_size();
  if (rows * columns == 0) return;
  const dim3 grid = RowGrid(channels, columns);
  if (FitsUint32(columns) && FitsUint32(batch * channels)) {
    Im2ColKernel<uint32_t><<<grid, kThreads, 0, stream>>>(x, static_cast<uint32_t>(batch),
                                                          static_cast<uint32_t>(channels), g, col);
  } else {
    Im2ColKernel<int64_t><<<grid, kThreads, 0, stream>>>(x, batch, channels, g, col);
  }
}

void LaunchCol2Im(const float* col, int64_t batch, int64_t channels, const Window2d& g, float* dx,
                  cudaStream_t stream) {
  const int64_t total = batch * channels * g.in_size();
  if (total == 0) return;
  const dim3 grid = RowGrid(batch * channels, g.in_size());
  if (FitsUint32(total) && FitsUint32(channels * g.kernel_h * g.kernel_w * batch * g.out_size())) {
    Col2ImKernel<uint32_t><<<grid, kThreads, 0, stream>>>(col, static_cast<uint32_t>(batch),
                                                          static_cast<uint32_t>(channels), g, dx);
  } else {
    Col2ImKernel<int64_t><<<grid, kThreads, 0, stream>>>(col, batch, channels, g, dx);
  }
}

void LaunchSwapLeadingAxes(const float* in, int64_t a, int64_t b, int64_t p, const float* bias,
                           float* out, cudaStream_t stream) {
  const int64_t total = a * b * p;
  if (total == 0) return;
  const dim3 grid = RowGrid(a * b, p);
  if (FitsUint32(total)) {
    SwapLeadingAxesKernel<uint32_t>
        <<<grid, kThreads, 0, stream>>>(in, static_cast<uint32_t>(a), static_cast<uint32_t>(b),
                                        static_cast<uint32_t>(p), bias, out);
  } else {
    SwapLeadingAxesKernel<int64_t><<<grid, kThreads, 0, stream>>>(in, a, b, p, bias, out);
  }
}

}  // namespace autodist::gpu::detail
