// LeakyRelu's element-wise passes on CUDA: the CPU kernel's expressions (one multiplication by 1
// or alpha, runtime/ops/activation/leaky_relu.cc), so both backends give the same bits.
#include "gpu/device/cuda_error.h"
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {
namespace {

__global__ void LeakyReluKernel(const float* x, float* y, int64_t n, float alpha) {
  for (int64_t i = First(); i < n; i += Stride()) y[i] = x[i] * (x[i] > 0.0F ? 1.0F : alpha);
}

__global__ void LeakyReluGradKernel(const float* dy, const float* v, float* dx, int64_t n,
                                    float alpha) {
  for (int64_t i = First(); i < n; i += Stride()) dx[i] = dy[i] * (v[i] > 0.0F ? 1.0F : alpha);
}

}  // namespace

void LaunchLeakyRelu(const float* x, float* y, int64_t n, float alpha, cudaStream_t stream) {
  if (n == 0) return;
  LeakyReluKernel<<<Blocks(n), kThreads, 0, stream>>>(x, y, n, alpha);
  CheckCuda(cudaGetLastError(), "launching a LeakyRelu kernel");
}

void LaunchLeakyReluGrad(const float* dy, const float* v, float* dx, int64_t n, float alpha,
                         cudaStream_t stream) {
  if (n == 0) return;
  LeakyReluGradKernel<<<Blocks(n), kThreads, 0, stream>>>(dy, v, dx, n, alpha);
  CheckCuda(cudaGetLastError(), "launching a LeakyRelu gradient kernel");
}

}  // namespace autodist::gpu::detail
