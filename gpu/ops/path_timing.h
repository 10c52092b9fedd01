// Internal: how a kernel with two paths times them on the GPU for its measured choice (Conv's
// conv_choice.cc, pooling's pool_choice.cc): the same warm-up and the same count of runs for
// both, so their means compare.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

namespace autodist::gpu::detail {

// Milliseconds per run of `run` on `stream`: one run to warm up (a first cuBLASLt product of a
// shape times its candidates; a first cuDNN call may load kernels), then the mean of three
// between CUDA events. Waits for the GPU.
float MeanRunMs(cudaStream_t stream, const std::function<void()>& run);

}  // namespace autodist::gpu::detail
