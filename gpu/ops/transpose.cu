// Transpose's copy on CUDA: the output element at each index reads the input through the input's
// strides along the output's axes (runtime/ops/tensor/permutation.h lays them out), for elements
// of 4 and 8 bytes, on 32-bit indices where they fit.
#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {
namespace {

template <typename Element, typename Index>
__global__ void StridedCopyKernel(const Element* in, Element* out, StridedCopyPlan plan) {
  const auto n = static_cast<Index>(plan.n);
  for (Index e = blockIdx.x * blockDim.x + threadIdx.x; e < n; e += gridDim.x * blockDim.x) {
    Index rest = e;
    int64_t at = 0;
    for (int axis = plan.rank - 1; axis >= 0; --axis) {
      const auto dim = static_cast<Index>(plan.dims[axis]);
      const Index coordinate = rest % dim;
      rest /= dim;
      at += static_cast<int64_t>(coordinate) * plan.in_strides[axis];
    }
    out[e] = in[at];
  }
}

template <typename Element>
void Launch(const void* in, void* out, const StridedCopyPlan& plan, cudaStream_t stream) {
  if (FitsUint32(plan.n)) {
    StridedCopyKernel<Element, uint32_t><<<Blocks(plan.n), kThreads, 0, stream>>>(
        static_cast<const Element*>(in), static_cast<Element*>(out), plan);
  } else {
    StridedCopyKernel<Element, int64_t><<<Blocks(plan.n), kThreads, 0, stream>>>(
        static_cast<const Element*>(in), static_cast<Element*>(out), plan);
  }
}

}  // namespace

void LaunchStridedCopy(const void* in, void* out, size_t element_size, const StridedCopyPlan& plan,
                       cudaStream_t stream) {
  if (plan.n == 0) return;
  if (element_size == 8) {
    Launch<uint64_t>(in, out, plan, stream);
  } else {
    Launch<uint32_t>(in, out, plan, stream);
  }
}

}  // namespace autodist::gpu::detail
