// Pushes compressed on the device where a gradient is (runtime/compress/device_push_encoder.h),
// run on the CPU: a "GPU" whose memory is host memory, and a push encoder registered for it that
// compresses with the host's own push forms (host_backed_push_stream.h), so that what is checked
// here is the routing and the state keeping (a stream per replica and tensor, kept on its device;
// residuals read back; bad streams refused). The CUDA encoders' numbers are checked against the
// host's on a GPU (tests/gpu/push_streams_test.cc).
#include "runtime/compress/device_push_encoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "runtime/compress/push_encoder.h"
#include "tests/compress/host_backed_push_stream.h"
#include "tests/error_of.h"
#include "tests/tensor/host_backed_memory.h"

namespace autodist::compress {
namespace {

using autodist::testing::ErrorOf;
using tensor::Device;
using tensor::Tensor;
using ::testing::HasSubstr;
using testing::HostBackedPushStream;

// The "GPU" and its encoders of the Horovod pair (not TopK), for the whole test program.
class DevicePushEncoderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, &memory_);
    testing::RegisterHostBackedPushEncoders({CompressorKind::kHorovod, CompressorKind::kHorovodEF});
  }
  static void TearDownTestSuite() {
    tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, nullptr);
  }

  static Tensor OnGpu(const std::vector<float>& values, int gpu = 0) {
    return Tensor::FromVector<float>({static_cast<int64_t>(values.size())}, values)
        .To(Device::Cuda(gpu));
  }

  static inline tensor::testing::HostBackedMemory memory_;
};

TEST_F(DevicePushEncoderTest, ADeviceGradientIsEncodedOnItsDeviceAsTheHostWouldEncodeIt) {
  const std::vector<float> values{1.0F + 0x1p-12F, -2.5F, 3.0F + 0x1p-11F};
  PushEncoder host;
  PushEncoder device;
  EncodedPush from_host;
  EncodedPush from_device;
  const int made = HostBackedPushStream::made;
  const int encoded = HostBackedPushStream::encoded;
  for (int step = 0; step < 3; ++step) {
    host.Encode("push", 0, "w", Tensor::FromVector<float>({3}, values),
                {.kind = CompressorKind::kHorovodEF}, from_host);
    device.Encode("push", 0, "w", OnGpu(values), {.kind = CompressorKind::kHorovodEF}, from_device);
    EXPECT_EQ(from_device.form, EncodedPush::Form::kHalves);
    EXPECT_EQ(from_device.halves, from_host.halves) << "step " << step;
    EXPECT_EQ(*device.Residual(0, "w"), *host.Residual(0, "w")) << "step " << step;
  }
  EXPECT_EQ(HostBackedPushStream::made - made, 1);  // one stream, kept between steps
  EXPECT_EQ(HostBackedPushStream::encoded - encoded, 3);
  EXPECT_FALSE(device.Residual(1, "w").has_value());  // replica 1's stream: none yet
}

TEST_F(DevicePushEncoderTest, EachReplicaStreamKeepsItsOwnStateOnItsOwnDevice) {
  PushEncoder encoder;
  EncodedPush out;
  encoder.Encode("push", 0, "w", OnGpu({1.0F + 0x1p-12F}, 0), {.kind = CompressorKind::kHorovodEF},
                 out);
  encoder.Encode("push", 1, "w", OnGpu({4.0F}, 1), {.kind = CompressorKind::kHorovodEF}, out);
  EXPECT_EQ(*encoder.Residual(0, "w"), std::vector<float>{0x1p-12F});
  EXPECT_EQ(*encoder.Residual(1, "w"), std::vector<float>{0.0F});
  // Without error feedback there is nothing to read back, as on the host.
  encoder.Encode("push", 0, "b", OnGpu({2.0F}), {.kind = CompressorKind::kHorovod}, out);
  EXPECT_EQ(out.halves.size(), 1U);
  EXPECT_FALSE(encoder.Residual(0, "b").has_value());
}

TEST_F(DevicePushEncoderTest, AStreamThatMovesOrChangesSizeIsRefused) {
  PushEncoder encoder;
  EncodedPush out;
  encoder.Encode("push", 0, "w", OnGpu({1.0F, 2.0F}, 0), {.kind = CompressorKind::kHorovodEF}, out);
  const Error moved = ErrorOf([&] {
    encoder.Encode("push to ps-0", 0, "w", OnGpu({1.0F, 2.0F}, 1),
                   {.kind = CompressorKind::kHorovodEF}, out);
  });
  EXPECT_EQ(moved.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(moved.what(), HasSubstr("push to ps-0: gradient 'w' of replica 0 is on cuda:1; its "
                                      "stream of pushes keeps its residual on cuda:0"));
  const Error to_host = ErrorOf([&] {
    encoder.Encode("push", 0, "w", Tensor::FromVector<float>({2}, {1.0F, 2.0F}),
                   {.kind = CompressorKind::kHorovodEF}, out);
  });
  EXPECT_THAT(to_host.what(), HasSubstr("is on cpu; its stream of pushes keeps its residual on "
                                        "cuda:0"));
  const Error resized = ErrorOf([&] {
    encoder.Encode("push", 0, "w", OnGpu({1.0F}), {.kind = CompressorKind::kHorovodEF}, out);
  });
  EXPECT_THAT(resized.what(), HasSubstr("gradient 'w' of replica 0 has 1 elements; its "
                                        "error-feedback residual has 2"));
}

TEST_F(DevicePushEncoderTest, AKindTheDeviceCannotEncodeIsAClearError) {
  EXPECT_TRUE(HasDevicePushEncoder(CompressorKind::kHorovodEF, tensor::DeviceKind::kCuda));
  EXPECT_FALSE(HasDevicePushEncoder(CompressorKind::kTopKEF, tensor::DeviceKind::kCuda));
  EXPECT_FALSE(HasDevicePushEncoder(CompressorKind::kHorovodEF, tensor::DeviceKind::kCpu));
  PushEncoder encoder;
  EncodedPush out;
  const Error error = ErrorOf([&] {
    encoder.Encode("push", 0, "w", OnGpu({1.0F}),
                   {.kind = CompressorKind::kTopKEF, .fraction = 0.5}, out);
  });
  EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(error.what(), HasSubstr("TopKCompressorEF pushes cannot be compressed on cuda "
                                      "devices"));
  // Nothing half made is left behind: the stream is still unknown.
  EXPECT_FALSE(encoder.Residual(0, "w").has_value());
  const Error twice = ErrorOf([] {
    RegisterDevicePushEncoder(CompressorKind::kHorovod, tensor::DeviceKind::kCuda,
                              [](const Device&, int64_t, const CompressorOptions&) {
                                return std::unique_ptr<DevicePushStream>();
                              });
  });
  EXPECT_EQ(twice.code(), ErrorCode::kInternal);
  EXPECT_THAT(twice.what(), HasSubstr("a second HorovodCompressor push encoder for cuda"));
}

}  // namespace
}  // namespace autodist::compress
