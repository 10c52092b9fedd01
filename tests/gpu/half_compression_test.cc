// The float16 compression kernels against the CPU's routines on the same inputs, bit for bit:
// the cast (round to nearest, ties to even, overflow, subnormals), the error-feedback residual
// (0 where a finite value overflowed), and the way back; aligned arrays (the vector path) and
// misaligned ones with odd lengths (the scalar path). SKIPPED without a GPU.
#include "gpu/compress/half_compression.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/device/cuda_error.h"
#include "runtime/compress/error_feedback.h"
#include "runtime/tensor/float16.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::gpu {
namespace {

// Inputs that cover the cast's cases: ordinary values at several scales, the largest half and
// the midpoint above it, overflow, subnormal halves and values that round to zero, infinities
// and a NaN.
std::vector<float> Inputs(size_t count, uint32_t seed) {
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

// A device copy of `bytes` at `host`, with `offset` bytes of room first (misalignment).
class DeviceBytes {
 public:
  DeviceBytes(const void* host, size_t bytes, size_t offset) : bytes_(bytes), offset_(offset) {
    CheckCuda(cudaMalloc(&base_, bytes + offset + 16), "test: cudaMalloc");
    if (host != nullptr) {
      CheckCuda(cudaMemcpy(data(), host, bytes, cudaMemcpyHostToDevice), "test: to the device");
    }
  }
  ~DeviceBytes() { cudaFree(base_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  void* data() { return static_cast<char*>(base_) + offset_; }
  template <typename T>
  std::vector<T> Read() {
    std::vector<T> out(bytes_ / sizeof(T));
    CheckCuda(cudaMemcpy(out.data(), data(), bytes_, cudaMemcpyDeviceToHost), "test: to the host");
    return out;
  }

 private:
  void* base_ = nullptr;
  size_t bytes_;
  size_t offset_;
};

bool SameFloat(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

bool SameHalf(uint16_t a, uint16_t b) {
  const bool nan_a = (a & 0x7C00U) == 0x7C00U && (a & 0x03FFU) != 0;
  const bool nan_b = (b & 0x7C00U) == 0x7C00U && (b & 0x03FFU) != 0;
  return nan_a || nan_b ? nan_a && nan_b : a == b;
}

struct Layout {
  size_t count;
  size_t offset;  // bytes: 0 keeps the vector path, 4 forces the scalar one
};

class HalfCompressionTest : public ::testing::TestWithParam<Layout> {};

TEST_P(HalfCompressionTest, CastsAndErrorFeedbackMatchTheCpuBitForBit) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const auto [count, offset] = GetParam();
  const std::vector<float> gradient = Inputs(count, 1);
  std::vector<float> residual = Inputs(count, 2);
  for (float& r : residual) r = std::isfinite(r) ? r * 1.0e-4F : 0.0F;

  std::vector<uint16_t> cpu_plain(count);
  tensor::FloatsToHalves(gradient.data(), count, cpu_plain.data());
  std::vector<float> cpu_residual = residual;
  std::vector<uint16_t> cpu_feedback(count);
  compress::FloatsToHalvesWithFeedback(gradient.data(), count, cpu_residual.data(),
                                       cpu_feedback.data());

  DeviceBytes device_gradient(gradient.data(), count * sizeof(float), offset);
  DeviceBytes device_residual(residual.data(), count * sizeof(float), offset);
  DeviceBytes plain(nullptr, count * sizeof(uint16_t), offset / 2);
  DeviceBytes feedback(nullptr, count * sizeof(uint16_t), offset / 2);
  const auto* g = static_cast<const float*>(device_gradient.data());
  FloatsToHalvesOnDevice(g, nullptr, static_cast<uint16_t*>(plain.data()), count, nullptr);
  FloatsToHalvesOnDevice(g, static_cast<float*>(device_residual.data()),
                         static_cast<uint16_t*>(feedback.data()), count, nullptr);
  CheckCuda(cudaDeviceSynchronize(), "test: the kernels");

  const std::vector<uint16_t> got_plain = plain.Read<uint16_t>();
  const std::vector<uint16_t> got_feedback = feedback.Read<uint16_t>();
  const std::vector<float> got_residual = device_residual.Read<float>();
  for (size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(SameHalf(got_plain[i], cpu_plain[i]))
        << "element " << i << " (" << gradient[i] << "): " << got_plain[i] << " vs "
        << cpu_plain[i];
    ASSERT_TRUE(SameHalf(got_feedback[i], cpu_feedback[i])) << "element " << i;
    ASSERT_TRUE(SameFloat(got_residual[i], cpu_residual[i]))
        << "element " << i << ": residual " << got_residual[i] << " vs " << cpu_residual[i];
  }

  // And back: exact, as on the CPU.
  DeviceBytes back(nullptr, count * sizeof(float), offset);
  HalvesToFloatsOnDevice(static_cast<const uint16_t*>(feedback.data()),
                         static_cast<float*>(back.data()), count, nullptr);
  CheckCuda(cudaDeviceSynchronize(), "test: the kernel");
  std::vector<float> cpu_back(count);
  tensor::HalvesToFloats(cpu_feedback.data(), count, cpu_back.data());
  const std::vector<float> got_back = back.Read<float>();
  for (size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(SameFloat(got_back[i], cpu_back[i])) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, HalfCompressionTest,
                         ::testing::Values(Layout{1, 0}, Layout{3, 0}, Layout{4096, 0},
                                           Layout{1000003, 0}, Layout{1001, 4}),
                         [](const ::testing::TestParamInfo<Layout>& param) {
                           return std::to_string(param.param.count) +
                                  (param.param.offset == 0 ? "_aligned" : "_misaligned");
                         });

}  // namespace
}  // namespace autodist::gpu
