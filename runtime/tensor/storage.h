// Where tensor storage comes from: the process-wide BufferPool (buffer_pool.h), configured once at
// startup by the binary (from AUTODIST_TENSOR_POOL_MB, read where the process starts, not here).
// Tensor's constructors allocate through here; nothing else should.
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/tensor/buffer_pool.h"

namespace autodist::tensor {

// The environment variable that caps the process-wide pool's idle bytes, in MiB; 0 disables it.
// The binaries read it at startup and pass the result to ConfigureTensorPool.
inline constexpr const char* kTensorPoolEnv = "AUTODIST_TENSOR_POOL_MB";

// The process-wide pool's options: the defaults, with the cap from `megabytes` (the value of
// AUTODIST_TENSOR_POOL_MB) when it is not null. Throws kInvalidArgument unless it is a whole
// number of MiB, so that "64MB" or "-1" is an error rather than a silently different cap.
PoolOptions ParseTensorPoolOptions(const char* megabytes);

// Sets the options of the process-wide pool; call it at startup, before the first tensor. Throws
// kFailedPrecondition once the pool exists with other options (its buffers were sized by them).
void ConfigureTensorPool(const PoolOptions& options);

// The process-wide pool, created on first use with the options last given to
// ConfigureTensorPool (PoolOptions' defaults when none were). It is never destroyed: tensors held
// by static objects may be freed after every other static is gone.
BufferPool& TensorBufferPool();

enum class Pages {
  kAsIs,    // fresh memory is mapped by the writes that first touch it
  kMapped,  // the caller will overwrite the whole buffer: map a fresh buffer's pages up front
};

// Storage of at least `bytes` bytes, 64-byte aligned, uninitialized.
Storage AllocateStorage(size_t bytes, Pages pages);

}  // namespace autodist::tensor
