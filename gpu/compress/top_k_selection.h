// Top-k selection by magnitude on the device, for the TopK compressor of GPU workers: the same
// entries as the CPU's compress::SelectLargest (runtime/compress/top_k.h) for every input (NaN
// counts as the largest magnitude, ties go to the lower index, the positions come out
// ascending), and the error-feedback step of compress::TakeLargestWithFeedback bit for bit.
// Selection is a stable radix sort of (magnitude, position) pairs through CUB, descending, whose
// first k positions are then sorted ascending.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "gpu/memory/device_pool.h"

namespace autodist::gpu {

// Keeps the sort's scratch memory between calls (it grows to the largest count seen). Every call
// of one selector must use the same stream (the scratch is ordered on it). Pointers are device
// memory of the pool's GPU.
class TopKSelector {
 public:
  explicit TopKSelector(DevicePool& pool) : pool_(pool) {}

  // indices[0, k) = the positions of the k entries of values[0, count) largest in magnitude, in
  // ascending order. Requires 0 <= k <= count (Internal otherwise).
  void SelectLargest(const float* values, int64_t count, int64_t k, int64_t* indices,
                     cudaStream_t stream);

  // With error feedback: g' = residual + gradient, built in `residual`; the k entries of g'
  // largest in magnitude are selected (indices, ascending) and moved out: picked[j] =
  // g'[indices[j]], and residual[indices[j]] = 0.
  void TakeLargestWithFeedback(const float* gradient, int64_t count, float* residual, int64_t k,
                               int64_t* indices, float* picked, cudaStream_t stream);

 private:
  // Sorts the keys_ and positions_ of `count` entries (filled by the caller's kernel) and writes
  // the first k positions, ascending, to `indices`.
  void SortAndTake(int64_t count, int64_t k, int64_t* indices, cudaStream_t stream);
  // Grows the keys and positions, and their sorted copies, to `count` entries.
  void ReserveKeys(int64_t count, cudaStream_t stream);
  // Grows `buffer` to at least `bytes` on `stream`.
  void Reserve(DeviceBuffer& buffer, size_t bytes, cudaStream_t stream);

  DevicePool& pool_;
  DeviceBuffer keys_;
  DeviceBuffer sorted_keys_;
  DeviceBuffer positions_;
  DeviceBuffer sorted_positions_;
  DeviceBuffer temp_;
};

}  // namespace autodist::gpu
