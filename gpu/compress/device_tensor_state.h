// Per-tensor state of the compressors' flat forms on a GPU (residuals, PowerSGD's Q), kept by the
// gradient's name as compress::TensorState keeps it on the host, with the same check that a name
// keeps its size.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "gpu/memory/device_pool.h"

namespace autodist::gpu {

// `bytes` zeroed bytes from GPU `index`'s tensor pool, ordered on `stream`.
DeviceBuffer ZeroedDeviceBuffer(int index, size_t bytes, cudaStream_t stream);

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
