// Gather's passes on CUDA: the rows a lookup names copied out, and the gradient summed back into
// the rows, each (row, column) by one thread over the row's occurrences in the order they
// appear, from zero: the CPU's order (runtime/tensor/sparse_gradient.cc, CoalesceRows, and the
// dense path of gather.cc), so both backends give the same bits, without atomics.
#include "gpu/device/cuda_error.h"
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {
namespace {

template <typename Element>
__global__ void GatherRowsKernel(const Element* src, Element* dst, const int64_t* idx, int64_t n,
                                 int64_t dim, int64_t inner, int64_t total) {
  for (int64_t e = First(); e < total; e += Stride()) {
    const int64_t k = e % inner;
    const int64_t j = (e / inner) % n;
    const int64_t o = e / (inner * n);
    dst[e] = src[(o * dim + idx[j]) * inner + k];
  }
}

template <typename Element>
void Launch(const void* src, void* dst, const int64_t* idx, int64_t outer, int64_t n, int64_t dim,
            int64_t inner, cudaStream_t stream) {
  const int64_t total = outer * n * inner;
  GatherRowsKernel<Element><<<Blocks(total), kThreads, 0, stream>>>(
      static_cast<const Element*>(src), static_cast<Element*>(dst), idx, n, dim, inner, total);
}

__global__ void GatherGradKernel(const float* dy, float* dx, GatherGradPlan plan, int64_t total) {
  for (int64_t e = First(); e < total; e += Stride()) {
    const int64_t k = e % plan.inner;
    const int64_t u = (e / plan.inner) % plan.unique;
    const int64_t o = e / (plan.inner * plan.unique);
    float sum = 0.0F;
    for (int64_t p = plan.starts[u]; p < plan.starts[u + 1]; ++p) {
      sum += dy[(o * plan.n + plan.positions[p]) * plan.inner + k];
    }
    const int64_t row = plan.compact ? u : plan.rows[u];
    const int64_t rows = plan.compact ? plan.unique : plan.dim;
    dx[(o * rows + row) * plan.inner + k] = sum;
  }
}

}  // namespace

void LaunchGatherRows(const void* src, void* dst, const int64_t* idx, int64_t outer, int64_t n,
                      int64_t dim, int64_t inner, size_t element_size, cudaStream_t stream) {
  if (outer * n * inner == 0) return;
  if (element_size == 8) {
    Launch<uint64_t>(src, dst, idx, outer, n, dim, inner, stream);
  } else {
    Launch<uint32_t>(src, dst, idx, outer, n, dim, inner, stream);
  }
  CheckCuda(cudaGetLastError(), "launching a gather kernel");
}

void LaunchGatherGrad(const float* dy, float* dx, const GatherGradPlan& plan, cudaStream_t stream) {
  const int64_t total = plan.outer * plan.unique * plan.inner;
  if (total == 0) return;
  GatherGradKernel<<<Blocks(total), kThreads, 0, stream>>>(dy, dx, plan, total);
  CheckCuda(cudaGetLastError(), "launching a gather gradient kernel");
}

}  // namespace autodist::gpu::detail
