#include "gpu/memory/device_pool.h"

#include <fmt/format.h>

#include <utility>

#include "gpu/device/cuda_error.h"
#include "runtime/common/error.h"

namespace autodist::gpu {
namespace {

double MiB(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

DeviceBuffer::~DeviceBuffer() { Release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      stream_(other.stream_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    stream_ = other.stream_;
  }
  return *this;
}

void DeviceBuffer::Release() noexcept {
  if (data_ == nullptr) return;
  // A destructor cannot throw; a failed free means the context is already lost, which the next
  // checked call reports.
  cudaFreeAsync(data_, stream_);
  data_ = nullptr;
  bytes_ = 0;
}

DevicePool::DevicePool(const DevicePoolOptions& options) {
  CheckCuda(cudaGetDevice(&device_), "finding the current GPU");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device_;
  CheckCuda(cudaMemPoolCreate(&pool_, &props),
            fmt::format("creating the memory pool of GPU {}", device_));
  uint64_t threshold = options.release_threshold;
  CheckCuda(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold),
            "setting the memory pool's release threshold");
}

DevicePool::~DevicePool() {
  // Every buffer must be gone (their frees queued); destroying waits for none of them, so wait for
  // the device first, or the pool would vanish under queued frees.
  cudaDeviceSynchronize();
  cudaMemPoolDestroy(pool_);
}

DeviceBuffer DevicePool::Allocate(size_t bytes, cudaStream_t stream) {
  AD_CHECK(bytes > 0, kInternal, "a device allocation of 0 bytes");
  void* data = nullptr;
  const cudaError_t status = cudaMallocFromPoolAsync(&data, bytes, pool_, stream);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    Fail(ErrorCode::kUnavailable,
         "GPU {} is out of memory: {:.1f} MiB asked for, the pool holds {:.1f} MiB ({:.1f} MiB in "
         "use)",
         device_, MiB(bytes), MiB(reserved_bytes()), MiB(used_bytes()));
  }
  if (status != cudaSuccess) {
    CheckCuda(status, fmt::format("allocating {} bytes on GPU {}", bytes, device_));
  }
  return {data, bytes, stream};
}

uint64_t DevicePool::Attribute(cudaMemPoolAttr attribute) const {
  uint64_t value = 0;
  CheckCuda(cudaMemPoolGetAttribute(pool_, attribute, &value), "reading the memory pool's usage");
  return value;
}

uint64_t DevicePool::reserved_bytes() const { return Attribute(cudaMemPoolAttrReservedMemCurrent); }

uint64_t DevicePool::used_bytes() const { return Attribute(cudaMemPoolAttrUsedMemCurrent); }

uint64_t DevicePool::peak_used_bytes() const { return Attribute(cudaMemPoolAttrUsedMemHigh); }

void DevicePool::ResetPeak() {
  uint64_t zero = 0;
  CheckCuda(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero),
            "resetting the memory pool's peak");
}

}  // namespace autodist::gpu
