// Internal: 2-D MaxPool and AveragePool through cuDNN's pooling API, one of the two paths the
// pooling kernels choose between (pool_path.h). Built from cudnn_pool.cc where the CUDA toolkit
// has cuDNN, and from no_cudnn_pool.cc where it has not. The interface names no cuDNN type, so
// the kernels compile the same either way.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "gpu/ops/cudnn_build.h"
#include "gpu/ops/pool_path.h"
#include "runtime/ops/nn/window_geometry.h"

namespace autodist::gpu::detail {

// One pooling node's run on GPU `device` (float32, NCHW, on the device). Forward reads x and
// writes y; backward (means only, pool_path.h's CudnnMayTake) reads dy and writes dx.
struct CudnnPoolCall {
  pool::PoolKind kind = pool::PoolKind::kMax;
  int64_t batch = 0;
  int64_t channels = 0;
  const ops::nn::WindowGeometry* window = nullptr;
  int device = 0;
  cudaStream_t stream = nullptr;
  const std::string* node = nullptr;  // named in every error
  // MaxPool: the node has the Indices output or backward follows (CudnnMayTake).
  bool needs_argmax = false;
  const float* x = nullptr;
  float* y = nullptr;
  const float* dy = nullptr;
  float* dx = nullptr;
};

// Queues `direction` through cuDNN on the call's stream. False, with nothing queued, where cuDNN
// does not take it: the build has no cuDNN, CudnnDescribesPool or CudnnMayTake says no, cuDNN
// refuses the shape (CUDNN_STATUS_NOT_SUPPORTED) or its output size is not ours. Throws Internal
// naming the node and cuDNN's status for any other failure (kUnavailable out of memory).
bool RunCudnnPool(pool::PoolDirection direction, const CudnnPoolCall& call);

}  // namespace autodist::gpu::detail
