// Tensors on CUDA devices (tensor::Device::Cuda(i)): their storage comes from a DevicePool of
// GPU i, and everything done to it (allocation, copies, kernels) is ordered on one stream of that
// GPU, the tensor stream, so that no event is needed between them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpu/memory/device_pool.h"

namespace autodist::gpu {

// Makes tensors on CUDA devices possible in this process (tensor::InstallDeviceMemory); safe to
// call more than once and from several threads.
void InstallCudaTensorMemory();

// The tensor stream of GPU `index`, and its pool; created on first use (after checking that the
// GPU exists: FailedPrecondition naming it otherwise).
cudaStream_t TensorStream(int index);
DevicePool& TensorPool(int index);

// What tensors on GPU `index` hold now and at most so far (bytes as allocated, rounded up to
// 512), and what the buffer cache keeps for reuse: PyTorch's memory_allocated and
// max_memory_allocated, and the part of the pool's bytes in use that no tensor holds.
struct TensorMemoryStats {
  uint64_t live_bytes = 0;
  uint64_t peak_live_bytes = 0;
  uint64_t cached_bytes = 0;
};
TensorMemoryStats TensorMemory(int index);

}  // namespace autodist::gpu
