// The kernels of MaxPool, AveragePool and GlobalAveragePool on CUDA. MaxPool: one thread per output
// for the maxima (window_geometry.h's MaxOfWindow, the CPU's own code), one per input element for
// the gradient, which gathers the outputs whose argmax it is in output order, as the CPU adds them,
// without atomics; windows that do not overlap (2x2 with stride 2) write their taps from the
// outputs instead. One plane per grid row, 32-bit positions within it (MaxPool refuses planes of
// 2^31 elements or more).
#include "gpu/device/cuda_error.h"
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {
namespace {

__global__ void MaxPoolKernel(const float* x, int64_t planes, Window2d g, float* y,
                              int32_t* argmax) {
  const auto out_size = static_cast<unsigned>(g.out_size());
  const auto out_w = static_cast<unsigned>(g.out_w);
  for (int64_t plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    const float* in = x + plane * g.in_size();
    for (unsigned o = blockIdx.x * blockDim.x + threadIdx.x; o < out_size;
         o += gridDim.x * blockDim.x) {
      const unsigned oh = o / out_w;
      const ops::nn::WindowMax best = ops::nn::MaxOfWindow(in, g, ops::nn::RowTaps(g, oh),
                                                           ops::nn::ColumnTaps(g, o - oh * out_w));
      y[plane * out_size + o] = best.value;
      argmax[plane * out_size + o] = static_cast<int32_t>(best.index);
    }
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
  const auto in_size = static_cast<int>(g.in_size());
  const auto in_w = static_cast<int>(g.in_w);
  const auto out_w = static_cast<int>(g.out_w);
  const auto out_h = static_cast<int>(g.out_h);
  const auto kernel_h = static_cast<int>(g.kernel_h);
  const auto kernel_w = static_cast<int>(g.kernel_w);
  const auto stride_h = static_cast<int>(g.stride_h);
  const auto stride_w = static_cast<int>(g.stride_w);
  const auto pad_top = static_cast<int>(g.pad_top);
  const auto pad_left = static_cast<int>(g.pad_left);
  const auto dilation_h = static_cast<int>(g.dilation_h);
  const auto dilation_w = static_cast<int>(g.dilation_w);
  for (int64_t plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    const float* grad = dy + plane * g.out_size();
    const int32_t* best = argmax + plane * g.out_size();
    for (int local = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); local < in_size;
         local += static_cast<int>(gridDim.x * blockDim.x)) {
      const int ih = local / in_w;
      const int iw = local - ih * in_w;
      float sum = 0.0F;
      // Taps from the last to the first give the outputs in increasing order.
      for (int ki = kernel_h - 1; ki >= 0; --ki) {
        const int oh = ops::nn::OutputOfTap<int>(ih, ki, stride_h, pad_top, dilation_h, out_h);
        if (oh < 0) continue;
        for (int kj = kernel_w - 1; kj >= 0; --kj) {
          const int ow = ops::nn::OutputOfTap<int>(iw, kj, stride_w, pad_left, dilation_w, out_w);
          if (ow < 0) continue;
          const int o = oh * out_w + ow;
          if (best[o] == local) sum += grad[o];
        }
      }
      dx[plane * in_size + local] = sum;
    }
  }
}

// Windows that do not overlap: each input element is a tap of one window at most, so each output
// writes its own window's taps, its gradient at the argmax and zero elsewhere (0 + dy, the CPU's
// sum of one term, which turns -0 into +0 as it does).
__global__ void MaxPoolWindowGradKernel(const float* dy, const int32_t* argmax, int64_t planes,
                                        Window2d g, float* dx) {
  const auto out_size = static_cast<unsigned>(g.out_size());
  const auto out_w = static_cast<unsigned>(g.out_w);
  const auto in_w = static_cast<int>(g.in_w);
  for (int64_t plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    float* target = dx + plane * g.in_size();
    for (unsigned o = blockIdx.x * blockDim.x + threadIdx.x; o < out_size;
         o += gridDim.x * blockDim.x) {
      const unsigned oh = o / out_w;
      const ops::nn::WindowTaps rows = ops::nn::RowTaps(g, oh);
      const ops::nn::WindowTaps cols = ops::nn::ColumnTaps(g, o - oh * out_w);
      const int64_t at = plane * out_size + o;
      const int best = argmax[at];
      const float grad = 0.0F + dy[at];
      for (auto ih = static_cast<int>(rows.first); ih < rows.end;
           ih += static_cast<int>(g.dilation_h)) {
        for (auto iw = static_cast<int>(cols.first); iw < cols.end;
             iw += static_cast<int>(g.dilation_w)) {
          const int local = ih * in_w + iw;
          target[local] = local == best ? grad : 0.0F;
        }
      }
    }
  }
}

// GlobalAveragePool: one warp per plane, its lanes summing every 32nd element in double, then
// a butterfly of shuffles; the mean is the float sum times 1 / size in float, as on the CPU.
__global__ void PlaneMeansKernel(const float* x, int64_t planes, int64_t size, float inverse,
                                 float* out) {
  constexpr int kWarp = 32;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t plane = blockIdx.x * static_cast<int64_t>(blockDim.x / kWarp) + threadIdx.x / kWarp;
       plane < planes; plane += warps) {
    const float* in = x + plane * size;
    double sum = 0.0;
    for (int64_t i = lane; i < size; i += kWarp) sum += in[i];
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      sum += __shfl_down_sync(0xffffffffU, sum, offset);
    }
    if (lane == 0) out[plane] = static_cast<float>(sum) * inverse;
  }
}

// dx[p, i] = dy[p] * inverse.
template <typename Index>
__global__ void PlaneBroadcastKernel(const float* dy, Index size, Index n, float inverse,
                                     float* dx) {
  for (Index i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    dx[i] = dy[i / size] * inverse;
  }
}

// AveragePool: one thread per output (window_geometry.h's WindowMean, the CPU's own code), and
// for the gradient one per input element, adding each covering window's share in output order
// as the CPU does.
__global__ void AveragePoolKernel(const float* x, int64_t planes, Window2d g,
                                  bool count_include_pad, float* y) {
  const auto out_size = static_cast<unsigned>(g.out_size());
  const auto out_w = static_cast<unsigned>(g.out_w);
  for (int64_t plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    for (unsigned o = blockIdx.x * blockDim.x + threadIdx.x; o < out_size;
         o += gridDim.x * blockDim.x) {
      const unsigned oh = o / out_w;
      y[plane * out_size + o] =
          ops::nn::WindowMean(x + plane * g.in_size(), g, ops::nn::RowTaps(g, oh),
                              ops::nn::ColumnTaps(g, o - oh * out_w), count_include_pad);
    }
  }
}

__global__ void AveragePoolGradKernel(const float* dy, int64_t planes, Window2d g,
                                      bool count_include_pad, float* dx) {
  const auto in_size = static_cast<int>(g.in_size());
  const auto in_w = static_cast<int>(g.in_w);
  const auto out_w = static_cast<int>(g.out_w);
  const auto out_h = static_cast<int>(g.out_h);
  const auto kernel_h = static_cast<int>(g.kernel_h);
  const auto kernel_w = static_cast<int>(g.kernel_w);
  const auto stride_h = static_cast<int>(g.stride_h);
  const auto stride_w = static_cast<int>(g.stride_w);
  const auto pad_top = static_cast<int>(g.pad_top);
  const auto pad_left = static_cast<int>(g.pad_left);
  for (int64_t plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    const float* grad = dy + plane * g.out_size();
    for (int local = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); local < in_size;
         local += static_cast<int>(gridDim.x * blockDim.x)) {
      const int ih = local / in_w;
      const int iw = local - ih * in_w;
      float sum = 0.0F;
      for (int ki = kernel_h - 1; ki >= 0; --ki) {  // outputs in increasing order
        const int oh = ops::nn::OutputOfTap<int>(ih, ki, stride_h, pad_top, 1, out_h);
        if (oh < 0) continue;
        const ops::nn::WindowTaps rows = ops::nn::RowTaps(g, oh);
        for (int kj = kernel_w - 1; kj >= 0; --kj) {
          const int ow = ops::nn::OutputOfTap<int>(iw, kj, stride_w, pad_left, 1, out_w);
          if (ow < 0) continue;
          sum += grad[oh * out_w + ow] *
                 ops::nn::InverseWindowDivisor(rows, ops::nn::ColumnTaps(g, ow), count_include_pad);
        }
      }
      dx[plane * in_size + local] = sum;
    }
  }
}

// Whether each input element is a tap of one window at most, and whether of exactly one.
bool WindowsOverlap(const Window2d& g) {
  return (g.kernel_h - 1) * g.dilation_h + 1 > g.stride_h ||
         (g.kernel_w - 1) * g.dilation_w + 1 > g.stride_w;
}
bool WindowsTileTheInput(const Window2d& g) {
  return g.dilation_h == 1 && g.dilation_w == 1 && g.kernel_h == g.stride_h &&
         g.kernel_w == g.stride_w && g.pad_top == 0 && g.pad_left == 0 &&
         g.out_h * g.stride_h == g.in_h && g.out_w * g.stride_w == g.in_w;
}

}  // namespace

void LaunchMaxPool(const float* x, int64_t planes, const Window2d& g, float* y, int32_t* argmax,
                   cudaStream_t stream) {
  if (planes * g.out_size() == 0) return;
  MaxPoolKernel<<<RowGrid(planes, g.out_size()), kThreads, 0, stream>>>(x, planes, g, y, argmax);
}

void LaunchPlaneMeans(const float* x, int64_t planes, int64_t size, float inverse, float* out,
                      cudaStream_t stream) {
  if (planes == 0) return;
  constexpr int64_t kPlanesPerBlock = kThreads / 32;
  const int64_t blocks = (planes + kPlanesPerBlock - 1) / kPlanesPerBlock;
  PlaneMeansKernel<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), kThreads, 0, stream>>>(
      x, planes, size, inverse, out);
}

void LaunchPlaneBroadcast(const float* dy, int64_t planes, int64_t size, float inverse, float* dx,
                          cudaStream_t stream) {
  const int64_t n = planes * size;
  if (n == 0) return;
  if (FitsUint32(n)) {
    PlaneBroadcastKernel<uint32_t><<<Blocks(n), kThreads, 0, stream>>>(
        dy, static_cast<uint32_t>(size), static_cast<uint32_t>(n), inverse, dx);
  } else {
    PlaneBroadcastKernel<int64_t><<<Blocks(n), kThreads, 0, stream>>>(dy, size, n, inverse, dx);
  }
}

void LaunchAveragePool(const float* x, int64_t planes, const Window2d& g, bool count_include_pad,
                       float* y, cudaStream_t stream) {
  if (planes * g.out_size() == 0) return;
  AveragePoolKernel<<<RowGrid(planes, g.out_size()), kThreads, 0, stream>>>(x, planes, g,
                                                                            count_include_pad, y);
}

void LaunchAveragePoolGrad(const float* dy, int64_t planes, const Window2d& g,
                           bool count_include_pad, float* dx, cudaStream_t stream) {
  if (planes * g.in_size() == 0) return;
  AveragePoolGradKernel<<<RowGrid(planes, g.in_size()), kThreads, 0, stream>>>(
      dy, planes, g, count_include_pad, dx);
}

void LaunchMaxPoolIndices(const int32_t* argmax, int64_t planes, const Window2d& g,
                          bool column_major, int64_t* indices, cudaStream_t stream) {
  const int64_t total = planes * g.out_size();
  if (total == 0) return;
  IndicesKernel<<<Blocks(total), kThreads, 0, stream>>>(argmax, planes, g, column_major, indices);
}

void LaunchMaxPoolGrad(const float* dy, const int32_t* argmax, int64_t planes, const Window2d& g,
                       float* dx, cudaStream_t stream) {
  if (planes * g.in_size() == 0) return;
  if (!WindowsOverlap(g) && g.out_size() > 0) {
    if (!WindowsTileTheInput(g)) {
      CheckCuda(
          cudaMemsetAsync(dx, 0, static_cast<size_t>(planes * g.in_size()) * sizeof(float), stream),
          "zeroing MaxPool's input gradient");
    }
    MaxPoolWindowGradKernel<<<RowGrid(planes, g.out_size()), kThreads, 0, stream>>>(dy, argmax,
                                                                                    planes, g, dx);
    return;
  }
  MaxPoolGradKernel<<<RowGrid(planes, g.in_size()), kThreads, 0, stream>>>(dy, argmax, planes, g,
                                                                           dx);
}

}  // namespace autodist::gpu::detail
