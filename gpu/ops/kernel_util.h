// Internal: what every CUDA op kernel checks of its inputs and where it queues its work.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "gpu/blas/matmul.h"
#include "runtime/ops/precision.h"
#include "runtime/tensor/tensor.h"

namespace autodist::gpu::detail {

// The tensor stream of the GPU `tensor` is on (cuda_tensor_memory.h). Throws Internal naming the
// node when it is not on a CUDA device: the engine placed it wrong.
cudaStream_t StreamOf(const std::string& node, const tensor::Tensor& tensor);

// Throws InvalidArgument naming the node unless `tensor` is float32 (what the CUDA kernels take).
void RequireFloat32(const std::string& node, const tensor::Tensor& tensor, const char* what);

// The element size of `tensor` for the kernels that only move elements (copies, gathers): throws
// InvalidArgument naming the node unless it is 4 or 8 bytes.
size_t RequireMovableElements(const std::string& node, const tensor::Tensor& tensor,
                              const char* what);

// The arithmetic of the products of a session of `precision` (matrix products and convolutions).
GemmMath GemmMathOf(ops::Precision precision);

// Float32 `values` summed over the axes along which `target` was broadcast to them (a broadcast
// operand's gradient), on the same device and stream; `values` itself when the shapes are equal.
tensor::Tensor SumToShape(const std::string& node, const tensor::Tensor& values,
                          const tensor::Shape& target, cudaStream_t stream);

}  // namespace autodist::gpu::detail
