// Parameter-server pushes compressed on the GPU (gpu/compress/push_streams.h) against the host's
// push encoder on the same gradients, three steps of one stream each: the Horovod pair's halves
// and TopK's (index, value) pairs bit for bit, and the residual kept on the GPU bit for bit with
// the host's, for inputs with float16's special cases (overflow, subnormals, infinities, NaN).
// Through compress::PushEncoder, as the parameter-server client calls it. What the backend
// registers is checked without a GPU; the rest is SKIPPED without one.
#include "gpu/compress/push_streams.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/compress/push_encoder.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::gpu {
namespace {

using compress::CompressorKind;
using compress::CompressorOptions;
using compress::EncodedPush;
using tensor::Tensor;

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (testing::UlpDistance(a[i], b[i]) != 0) return false;
  }
  return true;
}

// Halves equal but for a NaN's payload (half_compression.h: only its sign and payload may
// differ).
bool SameHalves(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool nan_a = (a[i] & 0x7C00U) == 0x7C00U && (a[i] & 0x03FFU) != 0;
    const bool nan_b = (b[i] & 0x7C00U) == 0x7C00U && (b[i] & 0x03FFU) != 0;
    if (nan_a || nan_b ? !(nan_a && nan_b) : a[i] != b[i]) return false;
  }
  return true;
}

// Three steps of one stream, on the host and on GPU 0, compared after each.
void ExpectTheHostsPushes(const CompressorOptions& options, size_t count, bool with_nan) {
  compress::PushEncoder host;
  compress::PushEncoder device;
  for (int step = 0; step < 3; ++step) {
    std::vector<float> values = testing::CastInputs(count, static_cast<uint32_t>(10 + step));
    if (!with_nan) {
      for (float& value : values) value = std::isnan(value) ? 1.5F : value;
    }
    const Tensor on_host = Tensor::FromVector<float>({static_cast<int64_t>(count)}, values);
    EncodedPush expected;
    EncodedPush got;
    host.Encode("push", 0, "w", on_host, options, expected);
    device.Encode("push", 0, "w", on_host.To(tensor::Device::Cuda(0)), options, got);
    ASSERT_EQ(got.form, expected.form) << "step " << step;
    EXPECT_TRUE(SameHalves(got.halves, expected.halves)) << "step " << step;
    EXPECT_EQ(got.indices, expected.indices) << "step " << step;
    EXPECT_TRUE(SameBits(got.values, expected.values)) << "step " << step;
    const auto host_residual = host.Residual(0, "w");
    const auto device_residual = device.Residual(0, "w");
    ASSERT_EQ(device_residual.has_value(), host_residual.has_value()) << "step " << step;
    if (host_residual) {
      EXPECT_TRUE(SameBits(*device_residual, *host_residual)) << "step " << step;
    }
  }
}

struct Case {
  CompressorKind kind;
  double fraction;
  size_t count;  // odd counts take the float16 kernel's scalar path
};

class PushStreamsTest : public ::testing::TestWithParam<Case> {};

TEST_P(PushStreamsTest, PushesAreTheHostEncodersBitForBit) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  const Case& c = GetParam();
  // TopK's order of NaNs is the host's too, but a NaN residual stays NaN on both sides for
  // every later step; the float16 cases keep it, TopK's run without.
  ExpectTheHostsPushes({.kind = c.kind, .fraction = c.fraction}, c.count,
                       c.kind != CompressorKind::kTopKEF);
}

INSTANTIATE_TEST_SUITE_P(Kinds, PushStreamsTest,
                         ::testing::Values(Case{CompressorKind::kHorovod, 0.0, 4096},
                                           Case{CompressorKind::kHorovodEF, 0.0, 4096},
                                           Case{CompressorKind::kHorovodEF, 0.0, 1001},
                                           Case{CompressorKind::kTopKEF, 0.01, 5000},
                                           Case{CompressorKind::kTopKEF, 1.0, 300}),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return std::string(compress::CompressorName(param.param.kind)) + "_" +
                                  std::to_string(param.param.count);
                         });

TEST(PushStreamsTest, AnEmptyTensorPushesNothing) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  compress::PushEncoder encoder;
  EncodedPush out;
  const Tensor empty = Tensor(tensor::DType::kFloat32, {0}).To(tensor::Device::Cuda(0));
  encoder.Encode("push", 0, "w", empty, {.kind = CompressorKind::kHorovodEF}, out);
  EXPECT_TRUE(out.halves.empty());
  encoder.Encode("push", 0, "v", empty, {.kind = CompressorKind::kTopKEF, .fraction = 0.5}, out);
  EXPECT_TRUE(out.indices.empty());
  EXPECT_TRUE(out.values.empty());
}

TEST(PushStreamsTest, AreWhatTheBackendRegistersForCuda) {
  // Registered when the backend is linked, GPU or not.
  EXPECT_TRUE(compress::HasDevicePushEncoder(CompressorKind::kHorovod, tensor::DeviceKind::kCuda));
  EXPECT_TRUE(
      compress::HasDevicePushEncoder(CompressorKind::kHorovodEF, tensor::DeviceKind::kCuda));
  EXPECT_TRUE(compress::HasDevicePushEncoder(CompressorKind::kTopKEF, tensor::DeviceKind::kCuda));
  // PowerSGD needs an all-reduce, and uncompressed pushes are not encoded.
  EXPECT_FALSE(
      compress::HasDevicePushEncoder(CompressorKind::kPowerSGD, tensor::DeviceKind::kCuda));
  EXPECT_FALSE(compress::HasDevicePushEncoder(CompressorKind::kNone, tensor::DeviceKind::kCuda));
}

}  // namespace
}  // namespace autodist::gpu
