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

// Calls fn(T{}) for the element type `code` (CastElement); false for an unknown one.
template <typename Fn>
bool Visit(CastElement code, Fn&& fn) {
  switch (code) {
    case CastElement::kFloat32:
      fn(float{});
      return true;
    case CastElement::kFloat64:
      fn(double{});
      return true;
    case CastElement::kInt64:
      fn(int64_t{});
      return true;
    case CastElement::kInt32:
      fn(int32_t{});
      return true;
    case CastElement::kUInt8:
      fn(uint8_t{});
      return true;
    case CastElement::kInt8:
      fn(int8_t{});
      return true;
    case CastElement::kBool:
      fn(bool{});
      return true;
  }
  return false;
}

}  // namespace

bool LaunchCast(const void* in, CastElement from, void* out, CastElement to, int64_t n,
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
