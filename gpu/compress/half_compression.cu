// The kernels of half_compression.h. Where every array is aligned, each thread moves four
// elements at a time (a float4 of the gradient and of the residual, four halves as one 8-byte
// store), so that the casts stream memory at close to the device's bandwidth; otherwise one
// element at a time. Compiled without FMA contraction (CMake: --fmad=false); the cast itself is
// the hardware's round-to-nearest-even, the same bits as tensor::FloatToHalf for every number (a
// NaN stays a NaN, but the hardware's has its own sign and payload).
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "gpu/compress/half_compression.h"
#include "gpu/device/cuda_error.h"

namespace autodist::gpu {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU several times over; the loops stride past them.
constexpr int64_t kMaxBlocks = 4096;

__device__ float WithFeedback(float gradient, float* residual, __half* out) {
  const float sum = *residual + gradient;
  const __half half = __float2half_rn(sum);
  *out = half;
  const float sent = __half2float(half);
  // An overflow keeps no residual: -inf would poison every later step (error_feedback.h).
  *residual = isinf(sent) && isfinite(sum) ? 0.0F : sum - sent;
  return sent;
}

template <bool kFeedback>
__global__ void ToHalvesScalar(const float* gradient, float* residual, __half* out, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if constexpr (kFeedback) {
      WithFeedback(gradient[i], residual + i, out + i);
    } else {
      out[i] = __float2half_rn(gradient[i]);
    }
  }
}

// Elements [0, quads * 4), every array aligned for its vector type.
template <bool kFeedback>
__global__ void ToHalvesVector(const float* gradient, float* residual, __half* out, int64_t quads) {
  for (int64_t q = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; q < quads;
       q += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float4 g = reinterpret_cast<const float4*>(gradient)[q];
    __half h[4];
    if constexpr (kFeedback) {
      float4 r = reinterpret_cast<float4*>(residual)[q];
      WithFeedback(g.x, &r.x, &h[0]);
      WithFeedback(g.y, &r.y, &h[1]);
      WithFeedback(g.z, &r.z, &h[2]);
      WithFeedback(g.w, &r.w, &h[3]);
      reinterpret_cast<float4*>(residual)[q] = r;
    } else {
      h[0] = __float2half_rn(g.x);
      h[1] = __float2half_rn(g.y);
      h[2] = __float2half_rn(g.z);
      h[3] = __float2half_rn(g.w);
    }
    reinterpret_cast<uint2*>(out)[q] = *reinterpret_cast<const uint2*>(h);
  }
}

__global__ void ToFloatsScalar(const __half* in, float* out, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = __half2float(in[i]);
  }
}

__global__ void ToFloatsVector(const __half* in, float* out, int64_t quads) {
  for (int64_t q = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; q < quads;
       q += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint2 packed = reinterpret_cast<const uint2*>(in)[q];
    const __half* h = reinterpret_cast<const __half*>(&packed);
    reinterpret_cast<float4*>(out)[q] =
        make_float4(__half2float(h[0]), __half2float(h[1]), __half2float(h[2]), __half2float(h[3]));
  }
}

bool Aligned(const void* p, uintptr_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0;
}

int Blocks(int64_t items) {
  return static_cast<int>(std::clamp<int64_t>((items + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

}  // namespace

void FloatsToHalvesOnDevice(const float* gradient, float* residual, uint16_t* out, size_t count,
                            cudaStream_t stream) {
  if (count == 0) return;
  auto* halves = reinterpret_cast<__half*>(out);
  const auto n = static_cast<int64_t>(count);
  const bool vector =
      Aligned(gradient, 16) && (residual == nullptr || Aligned(residual, 16)) && Aligned(out, 8);
  const int64_t quads = vector ? n / 4 : 0;
  if (quads > 0) {
    if (residual != nullptr) {
      ToHalvesVector<true>
          <<<Blocks(quads), kThreads, 0, stream>>>(gradient, residual, halves, quads);
    } else {
      ToHalvesVector<false>
          <<<Blocks(quads), kThreads, 0, stream>>>(gradient, nullptr, halves, quads);
    }
  }
  const int64_t done = quads * 4;
  if (done < n) {
    float* rest = residual != nullptr ? residual + done : nullptr;
    if (rest != nullptr) {
      ToHalvesScalar<true><<<Blocks(n - done), kThreads, 0, stream>>>(gradient + done, rest,
                                                                      halves + done, n - done);
    } else {
      ToHalvesScalar<false><<<Blocks(n - done), kThreads, 0, stream>>>(gradient + done, nullptr,
                                                                       halves + done, n - done);
    }
  }
  CheckCuda(cudaGetLastError(), "launching a float16 compression kernel");
}

void HalvesToFloatsOnDevice(const uint16_t* in, float* out, size_t count, cudaStream_t stream) {
  if (count == 0) return;
  const auto* halves = reinterpret_cast<const __half*>(in);
  const auto n = static_cast<int64_t>(count);
  const int64_t quads = Aligned(in, 8) && Aligned(out, 16) ? n / 4 : 0;
  if (quads > 0) ToFloatsVector<<<Blocks(quads), kThreads, 0, stream>>>(halves, out, quads);
  const int64_t done = quads * 4;
  if (done < n) {
    ToFloatsScalar<<<Blocks(n - done), kThreads, 0, stream>>>(halves + done, out + done, n - done);
  }
  CheckCuda(cudaGetLastError(), "launching a float16 decompression kernel");
}

}  // namespace autodist::gpu
