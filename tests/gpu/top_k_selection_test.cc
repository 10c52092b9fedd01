// Top-k selection on the device against the CPU's on the same inputs: the same positions for
// every input (ties to the lower index, NaN as the largest magnitude, -0 and +0 alike, repeated
// magnitudes across signs), k from 0 to all, and the error-feedback step bit for bit (picked
// values and residual). SKIPPED without a GPU.
#include "gpu/compress/top_k_selection.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gpu/device/cuda_error.h"
#include "gpu/device/stream.h"
#include "runtime/common/error.h"
#include "runtime/compress/error_feedback.h"
#include "runtime/compress/top_k.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::gpu {
namespace {

using testing::DeviceArray;

// Normal values with many repeated magnitudes (quantized, both signs), zeros of both signs,
// infinities and NaNs.
std::vector<float> Inputs(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    float v = std::round(normal(rng) * 8.0F) / 8.0F;  // ties everywhere
    if (i % 101 == 0) v = -0.0F;
    if (i % 997 == 3) v = std::numeric_limits<float>::infinity();
    if (i % 1009 == 5) v = std::numeric_limits<float>::quiet_NaN();
    if (i % 1013 == 7) v = -std::numeric_limits<float>::infinity();
    values[i] = v;
  }
  return values;
}

bool SameFloat(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

struct Size {
  size_t count;
  double fraction;
};

class TopKSelectionTest : public ::testing::TestWithParam<Size> {};

TEST_P(TopKSelectionTest, PicksTheCpusPositions) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const auto [count, fraction] = GetParam();
  const int64_t n = static_cast<int64_t>(count);
  const int64_t k = compress::TopKCount(fraction, n);
  const std::vector<float> values = Inputs(count, 11);
  std::vector<int64_t> expected;
  compress::SelectLargest(values.data(), n, k, expected);

  DevicePool pool;
  Stream stream;
  TopKSelector selector(pool);
  DeviceArray<float> device_values(values);
  DeviceArray<int64_t> indices(static_cast<size_t>(k));
  // Twice: the second call reuses the scratch of the first.
  for (int round = 0; round < 2; ++round) {
    selector.SelectLargest(device_values.get(), n, k, indices.get(), stream.get());
    stream.Synchronize();
    EXPECT_EQ(indices.Read(static_cast<size_t>(k)), expected) << "round " << round;
  }
}

TEST_P(TopKSelectionTest, ErrorFeedbackMatchesTheCpuBitForBit) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const auto [count, fraction] = GetParam();
  const int64_t n = static_cast<int64_t>(count);
  const int64_t k = compress::TopKCount(fraction, n);
  const std::vector<float> gradient = Inputs(count, 5);
  std::vector<float> residual = Inputs(count, 6);
  for (float& r : residual) r = std::isfinite(r) ? r * 0.25F : 0.0F;

  std::vector<float> cpu_residual = residual;
  std::vector<int64_t> cpu_indices;
  std::vector<float> cpu_picked;
  compress::TakeLargestWithFeedback(gradient.data(), count, cpu_residual.data(), k, cpu_indices,
                                    cpu_picked);

  DevicePool pool;
  Stream stream;
  TopKSelector selector(pool);
  DeviceArray<float> device_gradient(gradient);
  DeviceArray<float> device_residual(residual);
  DeviceArray<int64_t> indices(static_cast<size_t>(k));
  DeviceArray<float> picked(static_cast<size_t>(k));
  selector.TakeLargestWithFeedback(device_gradient.get(), n, device_residual.get(), k,
                                   indices.get(), picked.get(), stream.get());
  stream.Synchronize();
  EXPECT_EQ(indices.Read(static_cast<size_t>(k)), cpu_indices);
  const std::vector<float> got_picked = picked.Read(static_cast<size_t>(k));
  for (size_t j = 0; j < cpu_picked.size(); ++j) {
    ASSERT_TRUE(SameFloat(got_picked[j], cpu_picked[j])) << "picked " << j;
  }
  const std::vector<float> got_residual = device_residual.Read(count);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(SameFloat(got_residual[i], cpu_residual[i])) << "residual " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, TopKSelectionTest,
                         ::testing::Values(Size{1, 1.0}, Size{1000, 0.0}, Size{1000, 0.01},
                                           Size{4099, 0.1}, Size{4099, 1.0}, Size{1 << 20, 0.01},
                                           Size{3000001, 0.001}));

TEST(TopKSelectionTest, MoreThanTheCountIsRefused) {
  AUTODIST_SKIP_WITHOUT_GPU();
  DevicePool pool;
  Stream stream;
  TopKSelector selector(pool);
  DeviceArray<float> values(std::vector<float>{1, 2, 3});
  DeviceArray<int64_t> indices(4);
  EXPECT_THROW(selector.SelectLargest(values.get(), 3, 4, indices.get(), stream.get()), Error);
}

}  // namespace
}  // namespace autodist::gpu
