// Page-locked host memory: the staging area of input batches and of anything copied between host
// and device, so that copies run asynchronously (from pageable memory CUDA copies synchronously,
// through its own staging buffer).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace autodist::gpu {

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  // `bytes` of page-locked host memory (bytes > 0), uninitialized.
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Queues a copy of `bytes` between host and device (either way) on `stream`, naming `what` in the
// error. From pinned memory the copy is asynchronous.
void CopyAsync(void* destination, const void* source, size_t bytes, cudaStream_t stream,
               const char* what);

}  // namespace autodist::gpu
