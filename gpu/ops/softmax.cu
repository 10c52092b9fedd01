// The kernels of Softmax and LogSoftmax on CUDA over the [outer, n, inner] view
// (runtime/ops/activation/softmax_layout.h), with the CPU kernel's exponential (vec::Exp, one
// function for both backends). Contiguous rows (inner = 1, the attention scores' case) take a warp
// each, its lanes striding the row and combining by shuffles; strided rows take a thread each,
// neighbouring threads reading neighbouring columns.
#include <cmath>

#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"
#include "runtime/ops/math/vector_math.h"

namespace autodist::gpu::detail {
namespace {

constexpr int kWarp = 32;

__device__ float WarpMax(float value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    value = fmaxf(value, __shfl_xor_sync(0xffffffffU, value, offset));
  }
  return value;
}

__device__ float WarpSum(float value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xffffffffU, value, offset);
  }
  return value;
}

// The warp of this thread, and how many there are in the grid.
__device__ int64_t WarpIndex() {
  return (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / kWarp;
}
__device__ int64_t WarpCount() { return gridDim.x * static_cast<int64_t>(blockDim.x) / kWarp; }

template <bool kLog>
__global__ void SoftmaxRowsKernel(const float* x, float* y, int64_t rows, int64_t n) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  for (int64_t row = WarpIndex(); row < rows; row += WarpCount()) {
    const float* in = x + row * n;
    float* out = y + row * n;
    float max = -INFINITY;
    for (int64_t k = lane; k < n; k += kWarp) max = fmaxf(max, in[k]);
    max = WarpMax(max);
    float sum = 0.0F;
    for (int64_t k = lane; k < n; k += kWarp) {
      const float e = ops::vec::Exp(in[k] - max);
      if constexpr (!kLog) out[k] = e;
      sum += e;
    }
    sum = WarpSum(sum);
    if constexpr (kLog) {
      const float log_sum = logf(sum);
      for (int64_t k = lane; k < n; k += kWarp) out[k] = in[k] - max - log_sum;
    } else {
      const float scale = 1.0F / sum;
      for (int64_t k = lane; k < n; k += kWarp) out[k] *= scale;
    }
  }
}

template <bool kLog>
__global__ void SoftmaxColumnsKernel(const float* x, float* y, ops::SoftmaxLayout l) {
  for (int64_t column = First(); column < l.outer * l.inner; column += Stride()) {
    const int64_t o = column / l.inner;
    const int64_t j = column - o * l.inner;
    const float* in = x + o * l.n * l.inner + j;
    float* out = y + o * l.n * l.inner + j;
    float max = -INFINITY;
    for (int64_t k = 0; k < l.n; ++k) max = fmaxf(max, in[k * l.inner]);
    float sum = 0.0F;
    for (int64_t k = 0; k < l.n; ++k) {
      const float e = ops::vec::Exp(in[k * l.inner] - max);
      if constexpr (!kLog) out[k * l.inner] = e;
      sum += e;
    }
    if constexpr (kLog) {
      const float log_sum = logf(sum);
      for (int64_t k = 0; k < l.n; ++k) out[k * l.inner] = in[k * l.inner] - max - log_sum;
    } else {
      const float scale = 1.0F / sum;
      for (int64_t k = 0; k < l.n; ++k) out[k * l.inner] *= scale;
    }
  }
}

// Softmax dx = y (dy - Σ dy y); LogSoftmax dx = dy - exp(y) Σ dy.
template <bool kLog>
__device__ float Term(float g, float yv) {
  if constexpr (kLog) {
    return g;
  } else {
    return g * yv;
  }
}
template <bool kLog>
__device__ float InputGrad(float g, float yv, float dot) {
  if constexpr (kLog) {
    return g - ops::vec::Exp(yv) * dot;
  } else {
    return yv * (g - dot);
  }
}

template <bool kLog>
__global__ void SoftmaxGradRowsKernel(const float* g, const float* y, float* dx, int64_t rows,
                                      int64_t n) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  for (int64_t row = WarpIndex(); row < rows; row += WarpCount()) {
    const float* gr = g + row * n;
    const float* yr = y + row * n;
    float dot = 0.0F;
    for (int64_t k = lane; k < n; k += kWarp) dot += Term<kLog>(gr[k], yr[k]);
    dot = WarpSum(dot);
    for (int64_t k = lane; k < n; k += kWarp) dx[row * n + k] = InputGrad<kLog>(gr[k], yr[k], dot);
  }
}

template <bool kLog>
__global__ void SoftmaxGradColumnsKernel(const float* g, const float* y, float* dx,
                                         ops::SoftmaxLayout l) {
  for (int64_t column = First(); column < l.outer * l.inner; column += Stride()) {
    const int64_t o = column / l.inner;
    const int64_t base = o * l.n * l.inner + (column - o * l.inner);
    float dot = 0.0F;
    for (int64_t k = 0; k < l.n; ++k) {
      dot += Term<kLog>(g[base + k * l.inner], y[base + k * l.inner]);
    }
    for (int64_t k = 0; k < l.n; ++k) {
      const int64_t at = base + k * l.inner;
      dx[at] = InputGrad<kLog>(g[at], y[at], dot);
    }
  }
}

unsigned WarpBlocks(int64_t rows) {
  constexpr int64_t kWarpsPerBlock = kThreads / kWarp;
  const int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<unsigned>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

}  // namespace

template <bool kLog>
void LaunchSoftmax(const float* x, float* y, const ops::SoftmaxLayout& l, cudaStream_t stream) {
  if (l.outer * l.n * l.inner == 0) return;
  if (l.inner == 1) {
    SoftmaxRowsKernel<kLog><<<WarpBlocks(l.outer), kThreads, 0, stream>>>(x, y, l.outer, l.n);
  } else {
    SoftmaxColumnsKernel<kLog><<<Blocks(l.outer * l.inner), kThreads, 0, stream>>>(x, y, l);
  }
}

template <bool kLog>
void LaunchSoftmaxGrad(const float* dy, const float* y, float* dx, const ops::SoftmaxLayout& l,
                       cudaStream_t stream) {
  if (l.outer * l.n * l.inner == 0) return;
  if (l.inner == 1) {
    SoftmaxGradRowsKernel<kLog>
        <<<WarpBlocks(l.outer), kThreads, 0, stream>>>(dy, y, dx, l.outer, l.n);
  } else {
    SoftmaxGradColumnsKernel<kLog>
        <<<Blocks(l.outer * l.inner), kThreads, 0, stream>>>(dy, y, dx, l);
  }
}

template void LaunchSoftmax<false>(const float*, float*, const ops::SoftmaxLayout&, cudaStream_t);
template void LaunchSoftmax<true>(const float*, float*, const ops::SoftmaxLayout&, cudaStream_t);
template void LaunchSoftmaxGrad<false>(const float*, const float*, float*,
                                       const ops::SoftmaxLayout&, cudaStream_t);
template void LaunchSoftmaxGrad<true>(const float*, const float*, float*, const ops::SoftmaxLayout&,
                                      cudaStream_t);

}  // namespace autodist::gpu::detail
