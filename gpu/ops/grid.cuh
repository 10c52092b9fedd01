// Internal, for the .cu files of gpu/ops: the grid of an element-wise launch. Kernels loop over
// their elements grid-stride, so a grid of at most 65,536 blocks covers any size and fills a GPU
// several times over.
#pragma once

#include <cstdint>

namespace autodist::gpu::detail {

inline constexpr int kThreads = 256;

// Blocks of kThreads for n elements (at least one, at most 65,536).
inline unsigned Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

// This thread's first element, and the distance to its next.
__device__ inline int64_t First() {
  return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
}
__device__ inline int64_t Stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace autodist::gpu::detail
