// Device memory for everything the engine allocates per step: a stream-ordered caching allocator
// on CUDA's own memory pools (cudaMallocFromPoolAsync). Freed memory goes back to the pool in the
// order of its stream and is reused by the next allocations without a cudaMalloc; with the
// default release threshold the pool keeps what it has reserved, so a training loop stops
// reserving after its first step.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <limits>

namespace autodist::gpu {

struct DevicePoolOptions {
  // Reserved bytes above which the pool returns memory to the device at a synchronization
  // point. The default keeps everything (what a training loop wants); 0 returns all idle memory.
  uint64_t release_threshold = std::numeric_limits<uint64_t>::max();
};

class DevicePool;

// Device memory owned by one holder, freed on its stream when the holder goes: work queued on
// that stream before the free may still use it, and later allocations reuse it in stream order.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }
  cudaStream_t stream() const { return stream_; }

 private:
  friend class DevicePool;
  DeviceBuffer(void* data, size_t bytes, cudaStream_t stream)
      : data_(data), bytes_(bytes), stream_(stream) {}
  void Release() noexcept;

  void* data_ = nullptr;
  size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
};

// The pool of one GPU (the current one when it is made). Its memory is ours alone: it is a pool
// of its own, not the device's default pool that other libraries share.
class DevicePool {
 public:
  explicit DevicePool(const DevicePoolOptions& options = {});
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  // `bytes` of device memory (bytes > 0), usable by work on `stream` from now on, and by other
  // streams once they wait for it (Event). Throws kUnavailable, naming the size and what the
  // pool holds, when the device has no room.
  DeviceBuffer Allocate(size_t bytes, cudaStream_t stream);

  int device() const { return device_; }
  // Bytes reserved from the device (held by the pool, in use or idle).
  uint64_t reserved_bytes() const;
  // Bytes handed out and not yet freed.
  uint64_t used_bytes() const;
  // The most bytes handed out at once since the last ResetPeak.
  uint64_t peak_used_bytes() const;
  void ResetPeak();

 private:
  uint64_t Attribute(cudaMemPoolAttr attribute) const;

  int device_ = 0;
  cudaMemPool_t pool_ = nullptr;
};

}  // namespace autodist::gpu
