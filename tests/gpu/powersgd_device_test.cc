// PowerSGD's device arithmetic against the CPU compressor's on the same inputs, one rank: the
// projection with error feedback, the orthonormalization (including a gradient of rank below r,
// whose extra columns become zero on both), the reprojection and the decompression with its new
// residual, to float rounding (the sums are ordered differently). SKIPPED without a GPU.
#include "gpu/compress/powersgd_device.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gpu/device/cuda_error.h"
#include "gpu/device/stream.h"
#include "runtime/compress/powersgd_math.h"
#include "runtime/ops/math/blas.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::gpu {
namespace {

constexpr double kEpsilon = 1e-5;  // the CPU compressor's orthogonalization epsilon

using DeviceFloats = testing::DeviceArray<float>;

std::vector<float> Normal(size_t count, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (float& v : values) v = normal(rng) * scale;
  return values;
}

// Within `relative` of the largest magnitude of `expected`.
void ExpectClose(const std::vector<float>& got, const std::vector<float>& expected, double relative,
                 const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  float largest = 0.0F;
  for (const float v : expected) largest = std::max(largest, std::abs(v));
  const double bound = relative * std::max(1e-30F, largest);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], expected[i], bound) << what << "[" << i << "]";
  }
}

struct Shape {
  int64_t n;
  int64_t m;
  int64_t rank;
  bool low_rank_gradient;  // M of rank 1: P's later columns are left with rounding only
};

class PowerSgdDeviceTest : public ::testing::TestWithParam<Shape> {};

TEST_P(PowerSgdDeviceTest, EveryStepMatchesTheCpuCompressor) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const auto [n, m, r, low_rank] = GetParam();
  const auto elements = static_cast<size_t>(n * m);
  std::vector<float> gradient = Normal(elements, 1, 0.01F);
  if (low_rank) {
    const std::vector<float> u = Normal(static_cast<size_t>(n), 2, 0.1F);
    const std::vector<float> v = Normal(static_cast<size_t>(m), 3, 0.1F);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) gradient[i * m + j] = u[i] * v[j];
    }
  }
  // No residual with the rank-1 gradient: it would add directions of its own.
  const std::vector<float> residual =
      low_rank ? std::vector<float>(elements, 0.0F) : Normal(elements, 4, 0.001F);
  const std::vector<float> q = compress::SeededNormal(7, "w", 0, static_cast<size_t>(m * r));

  // The CPU compressor's steps for one rank (powersgd_compressor.cc).
  std::vector<float> cpu_m = gradient;
  for (size_t i = 0; i < elements; ++i) cpu_m[i] += residual[i];
  std::vector<float> cpu_p(static_cast<size_t>(n * r));
  ops::Sgemm(false, false, n, r, m, 1.0F, cpu_m.data(), q.data(), 0.0F, cpu_p.data());
  const std::vector<float> cpu_projected = cpu_p;
  compress::OrthonormalizeColumns(cpu_p.data(), n, r, kEpsilon);
  std::vector<float> cpu_q(static_cast<size_t>(m * r));
  ops::Sgemm(true, false, m, r, n, 1.0F, cpu_m.data(), cpu_p.data(), 0.0F, cpu_q.data());
  std::vector<float> cpu_residual = cpu_m;
  ops::Sgemm(false, true, n, m, r, 1.0F, cpu_p.data(), cpu_q.data(), 0.0F, cpu_m.data());
  for (size_t i = 0; i < elements; ++i) cpu_residual[i] -= cpu_m[i] / 1.0F;

  DevicePool pool;
  Stream stream;
  DeviceFloats device_m(gradient);
  DeviceFloats device_residual(residual);
  DeviceFloats device_q(q);
  DeviceFloats device_p(std::vector<float>(static_cast<size_t>(n * r)));
  ProjectOnDevice(device_m.get(), device_residual.get(), n, m, device_q.get(), r, device_p.get(), 0,
                  stream.get());
  stream.Synchronize();
  ExpectClose(device_p.Read(), cpu_projected, 1e-5, "P");
  OrthonormalizeColumnsOnDevice(device_p.get(), n, r, kEpsilon, pool, stream.get());
  stream.Synchronize();
  const std::vector<float> p = device_p.Read();
  if (!low_rank) {
    ExpectClose(p, cpu_p, 1e-4, "orthonormal P");
    // Orthonormal columns.
    for (int64_t a = 0; a < r; ++a) {
      for (int64_t b = 0; b < r; ++b) {
        double dot = 0.0;
        for (int64_t i = 0; i < n; ++i) dot += double{p[i * r + a]} * p[i * r + b];
        EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-5) << a << "," << b;
      }
    }
  } else {
    // The first column is the gradient's one direction; the others keep only rounding noise
    // and are zero, on both.
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(p[i * r], cpu_p[i * r], 1e-4) << i;
      for (int64_t c = 1; c < r; ++c) {
        ASSERT_EQ(p[i * r + c], 0.0F) << i << "," << c;
        ASSERT_EQ(cpu_p[i * r + c], 0.0F) << i << "," << c;
      }
    }
  }
  ReprojectOnDevice(device_m.get(), n, m, device_p.get(), r, device_q.get(), 0, stream.get());
  DecompressOnDevice(device_m.get(), device_residual.get(), n, m, device_p.get(), device_q.get(), r,
                     1, 0, stream.get());
  stream.Synchronize();
  ExpectClose(device_q.Read(), cpu_q, 1e-4, "Q");
  ExpectClose(device_m.Read(), cpu_m, 1e-4, "decompressed M");
  ExpectClose(device_residual.Read(), cpu_residual, 1e-4, "residual");
}

INSTANTIATE_TEST_SUITE_P(Shapes, PowerSgdDeviceTest,
                         ::testing::Values(Shape{256, 784, 1, false}, Shape{128, 256, 4, false},
                                           Shape{64, 288, 2, false}, Shape{128, 3136, 4, false},
                                           Shape{96, 200, 3, true}));

}  // namespace
}  // namespace autodist::gpu
