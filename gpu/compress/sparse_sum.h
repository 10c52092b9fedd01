// The sum of every rank's top-k entries, for the TopK compressor of GPU workers: the gathered
// (index, value) pairs scattered into zeros in rank order, the CPU compressor's additions in its
// order (runtime/compress/topk_compressor.h), so that every rank and the CPU get the same bits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace autodist::gpu {

// dense[0, count) = sum over ranks r in order of rank r's pairs (indices[r k + j], values[r k +
// j]) for j < k, starting from zeros. A rank's indices are distinct (they come from one
// selection), so one rank's pairs are added at once and the ranks one after another. A pair whose
// index lies outside [0, count) is skipped and counted in `*outside` (device memory, zeroed here).
// Queued on `stream` of the current GPU; returns the first error of queueing the zeroing (the
// kernels' launch errors are cudaGetLastError's).
cudaError_t SumSparseOnDevice(float* dense, int64_t count, const int64_t* indices,
                              const float* values, int64_t k, int ranks, int* outside,
                              cudaStream_t stream);

}  // namespace autodist::gpu
