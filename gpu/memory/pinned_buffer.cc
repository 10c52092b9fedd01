#include "gpu/memory/pinned_buffer.h"

#include <fmt/format.h>

#include <utility>

#include "gpu/device/cuda_error.h"
#include "runtime/common/error.h"

namespace autodist::gpu {

PinnedBuffer::PinnedBuffer(size_t bytes) : bytes_(bytes) {
  AD_CHECK(bytes > 0, kInternal, "a pinned host buffer of 0 bytes");
  CheckCuda(cudaHostAlloc(&data_, bytes, cudaHostAllocDefault),
            fmt::format("allocating {} bytes of pinned host memory", bytes));
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) cudaFreeHost(data_);
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void CopyAsync(void* destination, const void* source, size_t bytes, cudaStream_t stream,
               const char* what) {
  CheckCuda(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault, stream), what);
}

}  // namespace autodist::gpu
