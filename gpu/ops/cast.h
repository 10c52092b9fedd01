// Cast's conversion on CUDA (cast.cu), named by element codes so that the .cu file needs none of
// the tensor headers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace autodist::gpu::detail {

enum class CastElement { kFloat32, kFloat64, kInt64, kInt32, kUInt8, kInt8, kBool };

// out[i] = CastValue<to>(in[i]) for i in [0, n), both on the current GPU. False (nothing
// launched) for a pair it does not know.
bool LaunchCast(const void* in, CastElement from, void* out, CastElement to, int64_t n,
                cudaStream_t stream);

}  // namespace autodist::gpu::detail
