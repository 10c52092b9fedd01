// The kernels of softmax cross-entropy on CUDA: log-softmax by rows, the weighted NLL and its
// reduction, and the gradient, in the CPU kernel's order of operations
// (runtime/ops/loss/softmax_cross_entropy.cc, reduction.cc): float exponentials and sums per row,
// the reduction in double. One thread takes one row (the class counts of classifiers are small);
// the reduction is one block.
#include <cfloat>

#include "gpu/device/cuda_error.h"
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {
namespace {

constexpr int kReduceThreads = 1024;

// The offset of class 0 of row `row` (a row is one (n, d) pair), classes `d` apart.
__device__ int64_t RowBase(const CrossEntropyShape& s, int64_t row) {
  return (row / s.d) * s.c * s.d + row % s.d;
}

__device__ bool Ignored(const CrossEntropyShape& s, int64_t label) {
  return s.has_ignore_index && label == s.ignore_index;
}

__global__ void LogSoftmaxKernel(const float* x, float* lp, CrossEntropyShape s) {
  for (int64_t row = First(); row < s.n * s.d; row += Stride()) {
    const int64_t base = RowBase(s, row);
    float max = -INFINITY;
    for (int64_t k = 0; k < s.c; ++k) max = fmaxf(max, x[base + k * s.d]);
    float sum = 0.0F;
    for (int64_t k = 0; k < s.c; ++k) sum += expf(x[base + k * s.d] - max);
    const float log_sum = max + logf(sum);
    for (int64_t k = 0; k < s.c; ++k) lp[base + k * s.d] = x[base + k * s.d] - log_sum;
  }
}

__device__ float RowLoss(const float* lp, const CrossEntropyShape& s, int64_t row, float* weight) {
  const int64_t t = s.labels[row];
  if (Ignored(s, t)) {
    *weight = 0.0F;
    return 0.0F;
  }
  *weight = s.weights != nullptr ? s.weights[t] : 1.0F;
  return -*weight * lp[RowBase(s, row) + t * s.d];
}

__global__ void NllRowsKernel(const float* lp, CrossEntropyShape s, float* out) {
  for (int64_t row = First(); row < s.n * s.d; row += Stride()) {
    float weight = 0.0F;
    out[row] = RowLoss(lp, s, row, &weight);
  }
}

__global__ void __launch_bounds__(kReduceThreads)
    NllSumKernel(const float* lp, CrossEntropyShape s, bool mean, float* out, float* weight_sum) {
  __shared__ double totals[kReduceThreads];
  __shared__ double weights[kReduceThreads];
  double total = 0.0;
  double weight_total = 0.0;
  for (int64_t row = threadIdx.x; row < s.n * s.d; row += kReduceThreads) {
    float weight = 0.0F;
    total += RowLoss(lp, s, row, &weight);
    weight_total += weight;
  }
  totals[threadIdx.x] = total;
  weights[threadIdx.x] = weight_total;
  __syncthreads();
  for (int half = kReduceThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      totals[threadIdx.x] += totals[threadIdx.x + half];
      weights[threadIdx.x] += weights[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    // As the CPU: the denominator is kept as a float, the division done in double.
    const float denominator = mean ? static_cast<float>(weights[0]) : 1.0F;
    out[0] = static_cast<float>(totals[0] / static_cast<double>(denominator));
    weight_sum[0] = denominator;
  }
}

__global__ void CrossEntropyGradKernel(const float* lp, CrossEntropyShape s, const float* dl,
                                       bool per_row, const float* divisor, const float* dlp,
                                       float* g) {
  for (int64_t row = First(); row < s.n * s.d; row += Stride()) {
    const int64_t base = RowBase(s, row);
    for (int64_t k = 0; k < s.c; ++k) g[base + k * s.d] = 0.0F;
    if (dl != nullptr) {
      const int64_t t = s.labels[row];
      if (!Ignored(s, t)) {
        const float w = s.weights != nullptr ? s.weights[t] : 1.0F;
        const float scale = per_row ? dl[row] : dl[0] / divisor[0];
        // d(-w log p_t)/dx_k = w (p_k - [k == t])
        for (int64_t k = 0; k < s.c; ++k) g[base + k * s.d] += scale * w * expf(lp[base + k * s.d]);
        g[base + t * s.d] -= scale * w;
      }
    }
    if (dlp != nullptr) {
      // d log_softmax: g_k += dlp_k - p_k * sum_j dlp_j over the class axis.
      float sum = 0.0F;
      for (int64_t k = 0; k < s.c; ++k) sum += dlp[base + k * s.d];
      for (int64_t k = 0; k < s.c; ++k) {
        g[base + k * s.d] += dlp[base + k * s.d] - expf(lp[base + k * s.d]) * sum;
      }
    }
  }
}

// NegativeLogLikelihoodLoss's gradient with respect to its log-probabilities: -w * scale at each
// row's target, the rest left as it is (zeroed by the caller).
__global__ void NllGradKernel(CrossEntropyShape s, const float* dl, bool per_row,
                              const float* divisor, float* g) {
  for (int64_t row = First(); row < s.n * s.d; row += Stride()) {
    const int64_t t = s.labels[row];
    if (Ignored(s, t)) continue;
    const float w = s.weights != nullptr ? s.weights[t] : 1.0F;
    const float scale = per_row ? dl[row] : dl[0] / divisor[0];
    g[RowBase(s, row) + t * s.d] = -w * scale;
  }
}

}  // namespace

void LaunchNllGrad(const CrossEntropyShape& shape, const float* dl, bool per_row,
                   const float* divisor, float* g, cudaStream_t stream) {
  if (shape.n * shape.d == 0) return;
  NllGradKernel<<<Blocks(shape.n * shape.d), kThreads, 0, stream>>>(shape, dl, per_row, divisor, g);
  CheckCuda(cudaGetLastError(), "launching a negative log-likelihood gradient kernel");
}

void LaunchLogSoftmax(const float* x, float* lp, const CrossEntropyShape& shape,
                      cudaStream_t stream) {
  if (shape.n * shape.d == 0) return;
  LogSoftmaxKernel<<<Blocks(shape.n * shape.d), kThreads, 0, stream>>>(x, lp, shape);
  CheckCuda(cudaGetLastError(), "launching a log-softmax kernel");
}

void LaunchNll(const float* lp, const CrossEntropyShape& shape, bool reduce, bool mean, float* out,
               float* weight_sum, cudaStream_t stream) {
  if (reduce) {
    NllSumKernel<<<1, kReduceThreads, 0, stream>>>(lp, shape, mean, out, weight_sum);
  } else if (shape.n * shape.d > 0) {
    NllRowsKernel<<<Blocks(shape.n * shape.d), kThreads, 0, stream>>>(lp, shape, out);
  }
  CheckCuda(cudaGetLastError(), "launching a cross-entropy kernel");
}

void LaunchCrossEntropyGrad(const float* lp, const CrossEntropyShape& shape, const float* dl,
                            bool per_row, const float* divisor, const float* dlp, float* g,
                            cudaStream_t stream) {
  if (shape.n * shape.d == 0) return;
  CrossEntropyGradKernel<<<Blocks(shape.n * shape.d), kThreads, 0, stream>>>(lp, shape, dl, per_row,
                                                                             divisor, dlp, g);
  CheckCuda(cudaGetLastError(), "launching a cross-entropy gradient kernel");
}

}  // namespace autodist::gpu::detail
