// Cast's conversion on CUDA (cast.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/tensor/dtype.h"

namespace autodist::gpu::detail {

// out[i] = CastValue<to>(in[i]) for i in [0, n), both on the current GPU. False (nothing
// launched) for a type Cast does not convert (ops::VisitCastType's seven are the ones it does).
bool LaunchCast(const void* in, tensor::DType from, void* out, tensor::DType to, int64_t n,
                cudaStream_t stream);

}  // namespace autodist::gpu::detail
