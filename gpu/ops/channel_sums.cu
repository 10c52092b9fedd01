// Per-channel sums over [N, C, inner] tensors (BatchNormalization's statistics and gradients,
// Conv's bias gradient), in two deterministic stages: a grid of (split, channel) blocks each sums
// its slice of the channel in double (threads in a fixed stride, then a tree in shared memory),
// and one thread per channel adds the slices in order. The same launch gives the same bits.
#include <algorithm>

#include "gpu/ops/grid.cuh"
#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {
namespace {

constexpr int kSumThreads = 256;
// Elements a block takes at least, and slices a channel is cut into at most.
constexpr int64_t kElementsPerSlice = 8192;
constexpr int64_t kMaxSlices = 128;
template <ChannelSum Kind, typename Index>
__global__ void __launch_bounds__(kSumThreads)
    SliceSumsKernel(const float* a, const float* b, const float* center, ChannelLayout layout,
                    int64_t slices, double* partial) {
  constexpr int kOutputs = Kind == ChannelSum::kGradientMoments ? 2 : 1;
  __shared__ double shared[kOutputs][kSumThreads];
  const int64_t c = blockIdx.y;
  const int64_t slice = blockIdx.x;
  const int64_t count = layout.count();
  const auto begin = static_cast<Index>(count * slice / slices);
  const auto end = static_cast<Index>(count * (slice + 1) / slices);
  const auto inner = static_cast<Index>(layout.inner);
  const float mid = Kind == ChannelSum::kValues ? 0.0F : center[c];
  // Element j of the channel is (n, i) = (j / inner, j % inner), at (n * C + c) * inner + i.
  const float* a_channel = a + c * layout.inner;
  const float* b_channel = Kind == ChannelSum::kGradientMoments ? b + c * layout.inner : nullptr;
  const int64_t image = layout.channels * layout.inner;
  double first = 0.0;
  double second = 0.0;
  for (Index j = begin + threadIdx.x; j < end; j += kSumThreads) {
    const Index n = j / inner;
    const int64_t at = n * image + (j - n * inner);
    const float value = a_channel[at];
    if constexpr (Kind == ChannelSum::kValues) {
      first += value;
    } else if constexpr (Kind == ChannelSum::kSquaredDeviation) {
      const float d = value - mid;
      first += d * d;
    } else {
      first += value;
      second += value * (b_channel[at] - mid);
    }
  }
  shared[0][threadIdx.x] = first;
  if constexpr (kOutputs == 2) shared[1][threadIdx.x] = second;
  __syncthreads();
  for (int width = kSumThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      for (int o = 0; o < kOutputs; ++o) shared[o][threadIdx.x] += shared[o][threadIdx.x + width];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    for (int o = 0; o < kOutputs; ++o) {
      partial[(o * layout.channels + c) * slices + slice] = shared[o][0];
    }
  }
}

template <ChannelSum Kind>
void LaunchSliceSums(const float* a, const float* b, const float* center,
                     const ChannelLayout& layout, int64_t slices, double* partial,
                     cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(slices), static_cast<unsigned>(layout.channels));
  if (FitsUint32(layout.count())) {
    SliceSumsKernel<Kind, uint32_t>
        <<<grid, kSumThreads, 0, stream>>>(a, b, center, layout, slices, partial);
  } else {
    SliceSumsKernel<Kind, int64_t>
        <<<grid, kSumThreads, 0, stream>>>(a, b, center, layout, slices, partial);
  }
}

// sums[k] = Σ_s partial[k * slices + s] for k in [0, rows).
__global__ void AddSlicesKernel(const double* partial, int64_t rows, int64_t slices, double* sums) {
  for (int64_t k = First(); k < rows; k += Stride()) {
    double total = 0.0;
    for (int64_t s = 0; s < slices; ++s) total += partial[k * slices + s];
    sums[k] = total;
  }
}

__global__ void DoubleToFloatKernel(const double* in, float* out, int64_t n) {
  for (int64_t i = First(); i < n; i += Stride()) out[i] = static_cast<float>(in[i]);
}

}  // namespace

int64_t ChannelSumSlices(const ChannelLayout& layout) {
  return std::clamp<int64_t>((layout.count() + kElementsPerSlice - 1) / kElementsPerSlice, 1,
                             kMaxSlices);
}

void LaunchChannelSums(ChannelSum kind, const float* a, const float* b, const float* center,
                       const ChannelLayout& layout, double* scratch, double* sums,
                       cudaStream_t stream) {
  const int64_t rows = layout.channels * (kind == ChannelSum::kGradientMoments ? 2 : 1);
  if (rows == 0) return;
  const int64_t slices = ChannelSumSlices(layout);
  switch (kind) {
    case ChannelSum::kValues:
      LaunchSliceSums<ChannelSum::kValues>(a, b, center, layout, slices, scratch, stream);
      break;
    case ChannelSum::kSquaredDeviation:
      LaunchSliceSums<ChannelSum::kSquaredDeviation>(a, b, center, layout, slices, scratch, stream);
      break;
    case ChannelSum::kGradientMoments:
      LaunchSliceSums<ChannelSum::kGradientMoments>(a, b, center, layout, slices, scratch, stream);
      break;
  }
  AddSlicesKernel<<<Blocks(rows), kThreads, 0, stream>>>(scratch, rows, slices, sums);
}

void LaunchDoubleToFloat(const double* in, float* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  DoubleToFloatKernel<<<Blocks(n), kThreads, 0, stream>>>(in, out, n);
}

}  // namespace autodist::gpu::detail
