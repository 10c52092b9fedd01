// Tensors on CUDA devices (tensor::Device::Cuda(i)): their storage comes from a DevicePool of
// GPU i, and everything done to it (allocation, copies, kernels) is ordered on one stream of that
// GPU, the tensor stream, so that no event is needed between them.
#pragma once

#include <cuda_runtime_api.h>

#include "gpu/memory/device_pool.h"

namespace autodist::gpu {

// Makes tensors on CUDA devices possible in this process (tensor::InstallDeviceMemory); safe to
// call more than once and from several threads.
void InstallCudaTensorMemory();

// The tensor stream of GPU `index`, and its pool; created on first use (after checking that the
// GPU exists: FailedPrecondition naming it otherwise).
cudaStream_t TensorStream(int index);
DevicePool& TensorPool(int index);

}  // namespace autodist::gpu
