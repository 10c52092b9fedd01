#include "gpu/compress/device_tensor_state.h"

#include "gpu/device/cuda_error.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/compress/group.h"

namespace autodist::gpu {

DeviceBuffer ZeroedDeviceBuffer(int index, size_t bytes, cudaStream_t stream) {
  DeviceBuffer buffer = TensorPool(index).Allocate(bytes, stream);
  CheckCuda(cudaMemsetAsync(buffer.data(), 0, bytes, stream), "zeroing a compression buffer");
  return buffer;
}

float* DeviceTensorState::Get(const std::string& group, const std::string& name, int64_t elements,
                              int index, cudaStream_t stream) {
  auto [it, inserted] = values_.try_emplace(name);
  if (inserted) {
    it->second = Entry{
        ZeroedDeviceBuffer(index, static_cast<size_t>(elements) * sizeof(float), stream), elements};
  } else {
    compress::CheckStateSize(compressor_, what_, group, name, static_cast<size_t>(elements),
                             static_cast<size_t>(it->second.elements));
  }
  return it->second.buffer.as<float>();
}

}  // namespace autodist::gpu
