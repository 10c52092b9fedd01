// Dropout's passes on CUDA: the CPU kernel's counter-based mask (runtime/ops/nn/dropout_mask.h)
// from the same seed, so both backends drop the same elements, and the same scaling.
#include "gpu/device/cuda_error.h"
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"
#include "runtime/ops/nn/dropout_mask.h"

namespace autodist::gpu::detail {
namespace {

__global__ void DropoutKernel(const float* x, float* y, bool* mask, int64_t n, uint64_t seed,
                              uint64_t threshold, float scale) {
  for (int64_t i = First(); i < n; i += Stride()) {
    const bool keep = ops::DropoutKeeps(seed, static_cast<uint64_t>(i), threshold);
    mask[i] = keep;
    y[i] = keep ? x[i] * scale : 0.0F;
  }
}

__global__ void DropoutGradKernel(const float* dy, const bool* mask, float* dx, int64_t n,
                                  float scale) {
  for (int64_t i = First(); i < n; i += Stride()) dx[i] = mask[i] ? dy[i] * scale : 0.0F;
}

}  // namespace

void LaunchDropout(const float* x, float* y, bool* mask, int64_t n, uint64_t seed,
                   uint64_t threshold, float scale, cudaStream_t stream) {
  if (n == 0) return;
  DropoutKernel<<<Blocks(n), kThreads, 0, stream>>>(x, y, mask, n, seed, threshold, scale);
  CheckCuda(cudaGetLastError(), "launching a Dropout kernel");
}

void LaunchDropoutGrad(const float* dy, const bool* mask, float* dx, int64_t n, float scale,
                       cudaStream_t stream) {
  if (n == 0) return;
  DropoutGradKernel<<<Blocks(n), kThreads, 0, stream>>>(dy, mask, dx, n, scale);
  CheckCuda(cudaGetLastError(), "launching a Dropout gradient kernel");
}

}  // namespace autodist::gpu::detail
