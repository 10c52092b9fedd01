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

// Whether a grid-stride loop over n elements can count in 32 bits: the kernels that decompose
// flat indices (divisions) then run on 32-bit ones, whose division costs a fraction of a 64-bit
// one. Every index below n must fit, and so must the last index plus one stride of the largest
// grid (Blocks), or the loop would wrap and start over forever.
inline bool FitsUint32(int64_t n) {
  return n <= (int64_t{1} << 32) - int64_t{65536} * kThreads;
}

// 2-D grids: blockIdx.y takes a row (at most kMaxGridRows, the rest by a stride loop), blockIdx.x
// and the threads the elements of the row.
inline constexpr int64_t kMaxGridRows = 65535;
inline dim3 RowGrid(int64_t rows, int64_t columns) {
  const int64_t y = rows < kMaxGridRows ? (rows > 0 ? rows : 1) : kMaxGridRows;
  int64_t x = (columns + kThreads - 1) / kThreads;
  x = x < 1 ? 1 : x;
  // Enough blocks in all to fill the GPU several times, not one block per few elements.
  const int64_t most_x = (int64_t{1} << 16) / y > 0 ? (int64_t{1} << 16) / y : 1;
  return {static_cast<unsigned>(x < most_x ? x : most_x), static_cast<unsigned>(y)};
}

}  // namespace autodist::gpu::detail
