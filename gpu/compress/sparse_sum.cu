// The kernel of sparse_sum.h: one launch per rank, one thread per pair of it.
#include <algorithm>
#include <cstdint>

#include "gpu/compress/sparse_sum.h"

namespace autodist::gpu {
namespace {

constexpr int kThreads = 256;

__global__ void AddPairs(float* dense, int64_t count, const int64_t* indices, const float* values,
                         int64_t k, int* outside) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= k) return;
  const int64_t index = indices[j];
  if (index < 0 || index >= count) {
    atomicAdd(outside, 1);
    return;
  }
  dense[index] += values[j];
}

}  // namespace

cudaError_t SumSparseOnDevice(float* dense, int64_t count, const int64_t* indices,
                              const float* values, int64_t k, int ranks, int* outside,
                              cudaStream_t stream) {
  cudaError_t status = cudaMemsetAsync(dense, 0, static_cast<size_t>(count) * sizeof(float), stream);
  if (status == cudaSuccess) status = cudaMemsetAsync(outside, 0, sizeof(int), stream);
  if (status != cudaSuccess || k == 0) return status;
  const auto blocks = static_cast<unsigned>((k + kThreads - 1) / kThreads);
  for (int r = 0; r < ranks; ++r) {
    AddPairs<<<blocks, kThreads, 0, stream>>>(dense, count, indices + r * k, values + r * k, k,
                                              outside);
  }
  return cudaSuccess;
}

}  // namespace autodist::gpu
