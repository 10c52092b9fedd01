// The kernels and sorts of top_k_selection.h. Positions are 32-bit while the count allows it
// (half the sort's traffic for its values), 64-bit beyond.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <limits>
#include <string>

#include "gpu/compress/top_k_selection.h"
#include "gpu/device/cuda_error.h"

namespace autodist::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

int Blocks(int64_t items) {
  return static_cast<int>(std::clamp<int64_t>((items + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

// compress/top_k.cc's Magnitude: NaN ranks as the largest.
__device__ float Magnitude(float value) { return isnan(value) ? INFINITY : fabsf(value); }

template <typename Position>
__global__ void MagnitudeKeys(const float* values, float* keys, Position* positions,
                              int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    keys[i] = Magnitude(values[i]);
    positions[i] = static_cast<Position>(i);
  }
}

// g' = residual + gradient into the residual (compress/error_feedback.cc), and its keys.
template <typename Position>
__global__ void FeedbackKeys(const float* gradient, float* residual, float* keys,
                             Position* positions, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float sum = residual[i] + gradient[i];
    residual[i] = sum;
    keys[i] = Magnitude(sum);
    positions[i] = static_cast<Position>(i);
  }
}

template <typename Position>
__global__ void Widen(const Position* in, int64_t* out, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = static_cast<int64_t>(in[i]);
  }
}

__global__ void MoveOut(const int64_t* indices, int64_t k, float* residual, float* picked) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < k;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t index = indices[j];
    picked[j] = residual[index];
    residual[index] = 0.0F;
  }
}

bool FitsUint32(int64_t count) {
  return count <= static_cast<int64_t>(std::numeric_limits<uint32_t>::max());
}

void CheckLaunch(const char* what) { CheckCuda(cudaGetLastError(), what); }

void CheckCount(int64_t count, int64_t k) {
  if (k < 0 || k > count) {
    CheckCuda(cudaErrorInvalidValue, "top-k selection of " + std::to_string(k) + " out of " +
                                         std::to_string(count) + " elements");
  }
}

}  // namespace

void TopKSelector::Reserve(DeviceBuffer& buffer, size_t bytes, cudaStream_t stream) {
  if (buffer.bytes() >= bytes) return;
  buffer = pool_.Allocate(std::max<size_t>(bytes, 1), stream);
}

template <typename Position>
static void SortAndTakeAs(int64_t count, int64_t k, DeviceBuffer& keys, DeviceBuffer& sorted_keys,
                          DeviceBuffer& positions, DeviceBuffer& sorted_positions,
                          DeviceBuffer& temp, int64_t* indices, cudaStream_t stream,
                          const auto& reserve) {
  const auto* key_in = keys.as<float>();
  auto* key_out = sorted_keys.as<float>();
  const auto* position_in = positions.as<Position>();
  auto* position_out = sorted_positions.as<Position>();
  size_t pairs_bytes = 0;
  CheckCuda(
      cub::DeviceRadixSort::SortPairsDescending(nullptr, pairs_bytes, key_in, key_out, position_in,
                                                position_out, count, 0, sizeof(float) * 8, stream),
      "sizing the top-k sort");
  // The k winners, ascending, sorted from the sorted positions back into `positions`.
  size_t keys_bytes = 0;
  auto* ascending = positions.as<Position>();
  CheckCuda(cub::DeviceRadixSort::SortKeys(nullptr, keys_bytes, position_out, ascending, k, 0,
                                           static_cast<int>(sizeof(Position) * 8), stream),
            "sizing the sort of the top-k positions");
  reserve(temp, std::max(pairs_bytes, keys_bytes));
  size_t temp_bytes = temp.bytes();
  CheckCuda(cub::DeviceRadixSort::SortPairsDescending(temp.data(), temp_bytes, key_in, key_out,
                                                      position_in, position_out, count, 0,
                                                      sizeof(float) * 8, stream),
            "sorting by magnitude");
  temp_bytes = temp.bytes();
  CheckCuda(cub::DeviceRadixSort::SortKeys(temp.data(), temp_bytes, position_out, ascending, k, 0,
                                           static_cast<int>(sizeof(Position) * 8), stream),
            "sorting the top-k positions");
  Widen<Position><<<Blocks(k), kThreads, 0, stream>>>(ascending, indices, k);
  CheckLaunch("widening the top-k positions");
}

void TopKSelector::ReserveKeys(int64_t count, cudaStream_t stream) {
  const size_t position_bytes = FitsUint32(count) ? sizeof(uint32_t) : sizeof(uint64_t);
  const auto n = static_cast<size_t>(count);
  Reserve(keys_, n * sizeof(float), stream);
  Reserve(sorted_keys_, n * sizeof(float), stream);
  Reserve(positions_, n * position_bytes, stream);
  Reserve(sorted_positions_, n * position_bytes, stream);
}

void TopKSelector::SortAndTake(int64_t count, int64_t k, int64_t* indices, cudaStream_t stream) {
  const auto reserve = [&](DeviceBuffer& buffer, size_t bytes) { Reserve(buffer, bytes, stream); };
  if (FitsUint32(count)) {
    SortAndTakeAs<uint32_t>(count, k, keys_, sorted_keys_, positions_, sorted_positions_, temp_,
                            indices, stream, reserve);
  } else {
    SortAndTakeAs<uint64_t>(count, k, keys_, sorted_keys_, positions_, sorted_positions_, temp_,
                            indices, stream, reserve);
  }
}

void TopKSelector::SelectLargest(const float* values, int64_t count, int64_t k, int64_t* indices,
                                 cudaStream_t stream) {
  CheckCount(count, k);
  if (k == 0) return;
  ReserveKeys(count, stream);
  if (FitsUint32(count)) {
    MagnitudeKeys<uint32_t><<<Blocks(count), kThreads, 0, stream>>>(
        values, keys_.as<float>(), positions_.as<uint32_t>(), count);
  } else {
    MagnitudeKeys<uint64_t><<<Blocks(count), kThreads, 0, stream>>>(
        values, keys_.as<float>(), positions_.as<uint64_t>(), count);
  }
  CheckLaunch("ranking by magnitude");
  SortAndTake(count, k, indices, stream);
}

void TopKSelector::TakeLargestWithFeedback(const float* gradient, int64_t count, float* residual,
                                           int64_t k, int64_t* indices, float* picked,
                                           cudaStream_t stream) {
  CheckCount(count, k);
  if (count == 0) return;
  ReserveKeys(count, stream);
  if (FitsUint32(count)) {
    FeedbackKeys<uint32_t><<<Blocks(count), kThreads, 0, stream>>>(
        gradient, residual, keys_.as<float>(), positions_.as<uint32_t>(), count);
  } else {
    FeedbackKeys<uint64_t><<<Blocks(count), kThreads, 0, stream>>>(
        gradient, residual, keys_.as<float>(), positions_.as<uint64_t>(), count);
  }
  CheckLaunch("adding the residual");
  if (k == 0) return;
  SortAndTake(count, k, indices, stream);
  MoveOut<<<Blocks(k), kThreads, 0, stream>>>(indices, k, residual, picked);
  CheckLaunch("moving the top-k entries out of the residual");
}

}  // namespace autodist::gpu
