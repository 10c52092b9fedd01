// The device memory of the compressors' flat forms on a GPU: their checked group buffer, scratch
// that grows to the largest group seen, and per-tensor state (residuals, PowerSGD's Q) kept by
// the gradient's name as compress::TensorState keeps it on the host, with the same check that a
// name keeps its size.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "gpu/memory/device_pool.h"
#include "runtime/tensor/tensor.h"

namespace autodist::gpu {

// `bytes` zeroed bytes from GPU `index`'s tensor pool, ordered on `stream`.
DeviceBuffer ZeroedDeviceBuffer(int index, size_t bytes, cudaStream_t stream);

// Replaces `buffer` by one of `bytes` from GPU `index`'s tensor pool when it is smaller (its
// contents are not kept); returns its memory.
template <typename T>
T* GrowDeviceBuffer(DeviceBuffer& buffer, size_t bytes, int index, cudaStream_t stream);

inline size_t FloatBytes(int64_t elements) { return static_cast<size_t>(elements) * sizeof(float); }

// The GPU of a flat form's group buffer; Internal naming `compressor` and `group` unless it is
// float32 on a GPU.
int FlatBufferGpu(const char* compressor, const std::string& group, const tensor::Tensor& buffer);

class DeviceTensorState {
 public:
  // `compressor` and `what` ("residual", "Q") name the state in errors.
  DeviceTensorState(const char* compressor, const char* what)
      : compressor_(compressor), what_(what) {}

  // The `elements` floats of `name` on GPU `index`, zeroed on first use (on `stream`); throws
  // FailedPrecondition when they exist with another size.
  float* Get(const std::string& group, const std::string& name, int64_t elements, int index,
             cudaStream_t stream);
  bool Contains(const std::string& name) const { return values_.contains(name); }

 private:
  struct Entry {
    DeviceBuffer buffer;
    int64_t elements = 0;
  };

  const char* compressor_;
  const char* what_;
  std::map<std::string, Entry> values_;
};

}  // namespace autodist::gpu
