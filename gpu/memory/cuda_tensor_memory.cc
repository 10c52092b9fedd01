#include "gpu/memory/cuda_tensor_memory.h"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>

#include "gpu/device/cuda_error.h"
#include "gpu/device/devices.h"
#include "gpu/device/stream.h"
#include "runtime/common/error.h"
#include "runtime/tensor/device.h"

namespace autodist::gpu {
namespace {

// One GPU's pool and tensor stream.
struct GpuContext {
  std::unique_ptr<Stream> stream;
  std::unique_ptr<DevicePool> pool;
};

class CudaTensorMemory final : public tensor::DeviceMemory {
 public:
  GpuContext& Context(int index) {
    const std::lock_guard lock(mutex_);
    auto it = contexts_.find(index);
    if (it != contexts_.end()) return it->second;
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    AD_CHECK(status == cudaSuccess && index >= 0 && index < count, kFailedPrecondition,
             "a tensor on cuda:{} needs GPU {}, but this process sees {}", index, index,
             DescribeGpus(DiscoverGpus()));
    UseGpu(index);
    GpuContext context;
    context.stream = std::make_unique<Stream>();
    context.pool = std::make_unique<DevicePool>();
    return contexts_.emplace(index, std::move(context)).first->second;
  }

  std::shared_ptr<std::byte[]> Allocate(size_t bytes, int index) override {  // NOLINT
    GpuContext& context = Context(index);
    auto* buffer = new DeviceBuffer(context.pool->Allocate(bytes, context.stream->get()));
    return {static_cast<std::byte*>(buffer->data()), [buffer](std::byte* /*data*/) {
              delete buffer;  // freed in stream order
            }};
  }

  void Copy(void* destination, const tensor::Device& to, const void* source,
            const tensor::Device& from, size_t bytes) override {
    const int index = to.is_cpu() ? from.index : to.index;
    const cudaStream_t stream = Context(index).stream->get();
    const std::string what = fmt::format("copying {} bytes from {} to {}", bytes,
                                         tensor::DeviceName(from), tensor::DeviceName(to));
    CheckCuda(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault, stream), what);
    CheckCuda(cudaStreamSynchronize(stream), what);
  }

  void Zero(void* data, const tensor::Device& device, size_t bytes) override {
    CheckCuda(cudaMemsetAsync(data, 0, bytes, Context(device.index).stream->get()),
              fmt::format("zeroing {} bytes on {}", bytes, tensor::DeviceName(device)));
  }

 private:
  std::mutex mutex_;
  std::map<int, GpuContext> contexts_;  // node-based: references stay valid
};

CudaTensorMemory& Memory() {
  // Never destroyed: tensors held by static objects may be freed after other statics are gone.
  static auto* memory = new CudaTensorMemory();
  return *memory;
}

}  // namespace

void InstallCudaTensorMemory() {
  tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, &Memory());
}

cudaStream_t TensorStream(int index) { return Memory().Context(index).stream->get(); }

DevicePool& TensorPool(int index) { return *Memory().Context(index).pool; }

}  // namespace autodist::gpu
