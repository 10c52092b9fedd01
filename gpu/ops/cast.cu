// Cast's conversion on CUDA: one element a thread, with the CPU kernel's own conversion
// (runtime/ops/tensor/cast_value.h), for every pair of the seven types Cast takes.
#include <cstdint>

#include "gpu/device/cuda_error.h"
#include "gpu/ops/cast.h"
#include "gpu/ops/grid.cuh"
#include "runtime/ops/tensor/cast_value.h"

namespace autodist::gpu::detail {
namespace {

template <typename From, typename To>
__global__ void CastKernel(const From* in, To* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = ops::CastValue<To>(in[i]);
  }
}

template <typename From, typename To>
void Launch(const void* in, void* out, int64_t n, cudaStream_t stream) {
  CastKernel<From, To>
      <<<Blocks(n), kThreads, 0, stream>>>(static_cast<const From*>(in), static_cast<To*>(out), n);
}

// Calls fn(T{}) for `dtype`, one of the seven Cast converts between; false for another.
template <typename Fn>
bool Visit(tensor::DType dtype, Fn&& fn) {
  switch (dtype) {
    case tensor::DType::kFloat32:
      fn(float{});
      return true;
    case tensor::DType::kFloat64:
      fn(double{});
      return true;
    case tensor::DType::kInt64:
      fn(int64_t{});
      return true;
    case tensor::DType::kInt32:
      fn(int32_t{});
      return true;
    case tensor::DType::kUInt8:
      fn(uint8_t{});
      return true;
    case tensor::DType::kInt8:
      fn(int8_t{});
      return true;
    case tensor::DType::kBool:
      fn(bool{});
      return true;
    default:
      return false;
  }
}

}  // namespace

bool LaunchCast(const void* in, tensor::DType from, void* out, tensor::DType to, int64_t n,
                cudaStream_t stream) {
  if (n == 0) return true;
  bool known = false;
  Visit(from, [&](auto from_tag) {
    known = Visit(
        to, [&](auto to_tag) { Launch<decltype(from_tag), decltype(to_tag)>(in, out, n, stream); });
  });
  if (known) CheckCuda(cudaGetLastError(), "launching a cast kernel");
  return known;
}

}  // namespace autodist::gpu::detail
