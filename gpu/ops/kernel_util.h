// Internal: what every CUDA op kernel checks of its inputs and where it queues its work.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "runtime/tensor/tensor.h"

namespace autodist::gpu::detail {

// The tensor stream of the GPU `tensor` is on (cuda_tensor_memory.h). Throws Internal naming the
// node when it is not on a CUDA device: the engine placed it wrong.
cudaStream_t StreamOf(const std::string& node, const tensor::Tensor& tensor);

// Throws InvalidArgument naming the node unless `tensor` is float32 (what the CUDA kernels take).
void RequireFloat32(const std::string& node, const tensor::Tensor& tensor, const char* what);

}  // namespace autodist::gpu::detail
