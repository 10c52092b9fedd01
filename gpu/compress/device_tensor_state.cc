#include "gpu/compress/device_tensor_state.h"

#include "gpu/device/cuda_error.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/common/error.h"
#include "runtime/compress/group.h"

namespace autodist::gpu {

DeviceBuffer ZeroedDeviceBuffer(int index, size_t bytes, cudaStream_t stream) {
  DeviceBuffer buffer = TensorPool(index).Allocate(bytes, stream);
  CheckCuda(cudaMemsetAsync(buffer.data(), 0, bytes, stream), "zeroing a compression buffer");
  return buffer;
}

template <typename T>
T* GrowDeviceBuffer(DeviceBuffer& buffer, size_t bytes, int index, cudaStream_t stream) {
  if (buffer.bytes() < bytes) buffer = TensorPool(index).Allocate(bytes, stream);
  return buffer.as<T>();
}

template float* GrowDeviceBuffer<float>(DeviceBuffer&, size_t, int, cudaStream_t);
template int* GrowDeviceBuffer<int>(DeviceBuffer&, size_t, int, cudaStream_t);
template int64_t* GrowDeviceBuffer<int64_t>(DeviceBuffer&, size_t, int, cudaStream_t);

int FlatBufferGpu(const char* compressor, const std::string& group, const tensor::Tensor& buffer) {
  AD_CHECK(buffer.device().kind == tensor::DeviceKind::kCuda &&
               buffer.dtype() == tensor::DType::kFloat32,
           kInternal, "{}: group '{}' needs a float32 buffer on a GPU, got {} on {}", compressor,
           group, tensor::DTypeName(buffer.dtype()), tensor::DeviceName(buffer.device()));
  return buffer.device().index;
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
