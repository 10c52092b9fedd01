// What the GPU tests share: skipping, visibly, where this machine has no GPU (ctest reports such
// a test as Skipped, tests/CMakeLists.txt), comparing floats by their bits, inputs that cover
// float16's cases, and device arrays.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include "gpu/device/cuda_error.h"
#include "gpu/device/devices.h"

// Skips the test unless a GPU is present; GTEST_SKIP returns from the test body.
#define AUTODIST_SKIP_WITHOUT_GPU()                                                           \
  do {                                                                                        \
    const ::autodist::gpu::GpuInventory autodist_inventory = ::autodist::gpu::DiscoverGpus(); \
    if (autodist_inventory.gpus.empty()) {                                                    \
      GTEST_SKIP() << "needs a GPU: " << autodist_inventory.why_none;                         \
    }                                                                                         \
  } while (false)

namespace autodist::gpu::testing {

// How many representable floats lie between a and b (0: the same bits; NaNs equal NaNs).
inline int64_t UlpDistance(float a, float b) {
  if (a != a && b != b) return 0;  // NOLINT(misc-redundant-expression): NaN tests
  int32_t ia = 0;
  int32_t ib = 0;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  // Map the sign-magnitude bits onto a line where adjacent floats are adjacent integers.
  const int64_t la = ia < 0 ? int64_t{INT32_MIN} - ia : ia;
  const int64_t lb = ib < 0 ? int64_t{INT32_MIN} - ib : ib;
  return std::llabs(la - lb);
}

// Inputs that cover float16's cases: ordinary values at several scales, the largest half and
// the midpoint above it, overflow, subnormal halves and values that round to zero, infinities
// and a NaN.
inline std::vector<float> CastInputs(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  const float specials[] = {65504.0F,
                            65519.0F,
                            65520.0F,
                            70000.0F,
                            -70000.0F,
                            6.0e-8F,
                            -2.0e-8F,
                            1.0e-5F,
                            0.0F,
                            -0.0F,
                            1.0F / 3.0F,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    values[i] = i % 17 == 0 ? specials[(i / 17) % std::size(specials)]
                            : normal(rng) * std::pow(10.0F, static_cast<float>(i % 9) - 4.0F);
  }
  return values;
}

// Device memory of `size` T (cudaMalloc, apart from our pools), freed with the array.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t size) : size_(size) {
    CheckCuda(cudaMalloc(&data_, std::max<size_t>(1, size_) * sizeof(T)), "test: cudaMalloc");
  }
  // A copy of `values`, landed when the constructor returns (a copy from pageable memory may
  // return before it lands, and the code under test orders itself after its own streams only).
  explicit DeviceArray(const std::vector<T>& values) : DeviceArray(values.size()) {
    CheckCuda(cudaMemcpy(data_, values.data(), size_ * sizeof(T), cudaMemcpyHostToDevice),
              "test: to the device");
    CheckCuda(cudaDeviceSynchronize(), "test: the copy");
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() { return static_cast<T*>(data_); }
  // The first `count` elements (all by default), copied to the host.
  std::vector<T> Read(size_t count) const {
    std::vector<T> values(count);
    CheckCuda(cudaMemcpy(values.data(), data_, count * sizeof(T), cudaMemcpyDeviceToHost),
              "test: to the host");
    return values;
  }
  std::vector<T> Read() const { return Read(size_); }

 private:
  void* data_ = nullptr;
  size_t size_;
};

}  // namespace autodist::gpu::testing
