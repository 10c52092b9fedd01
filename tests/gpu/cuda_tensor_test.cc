// Tensors on CUDA devices: the round trip through the device, copies and zeroing on it, and the
// error for a GPU the process does not have (which runs without a GPU too).
#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "gpu/device/devices.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/common/error.h"
#include "runtime/tensor/tensor.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::gpu {
namespace {

using tensor::Device;
using tensor::Tensor;
using ::testing::HasSubstr;

TEST(CudaTensorTest, AGpuThisProcessDoesNotHaveIsAClearError) {
  InstallCudaTensorMemory();
  const int present = static_cast<int>(DiscoverGpus().gpus.size());
  try {
    Tensor t(tensor::DType::kFloat32, {4}, Device::Cuda(present));
    FAIL() << "made a tensor on a GPU that is not there";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
    EXPECT_THAT(error.what(),
                HasSubstr("a tensor on cuda:" + std::to_string(present) + " needs GPU " +
                          std::to_string(present) + ", but this process sees "));
  }
}

TEST(CudaTensorTest, RoundTripsCopiesAndZeroesOnTheDevice) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  std::vector<float> values(100003);
  std::iota(values.begin(), values.end(), -5.0F);
  const Tensor host = Tensor::FromVector<float>({100003}, values);
  const Tensor device = host.To(Device::Cuda(0));
  EXPECT_EQ(device.device(), Device::Cuda(0));
  Tensor copy = device.Clone();
  const Tensor back = copy.To(Device::Cpu());
  for (size_t i = 0; i < values.size(); i += 997) ASSERT_EQ(back.data<float>()[i], values[i]);
  copy.SetZero();
  const Tensor zeros = copy.To(Device::Cpu());
  for (size_t i = 0; i < values.size(); i += 997) ASSERT_EQ(zeros.data<float>()[i], 0.0F);
  // The original on the device is untouched by the clone's zeroing.
  EXPECT_EQ(device.To(Device::Cpu()).data<float>()[7], values[7]);
  // Empty tensors move too.
  const Tensor empty = Tensor(tensor::DType::kFloat32, {0, 3}).To(Device::Cuda(0));
  EXPECT_EQ(empty.To(Device::Cpu()).numel(), 0);
}

// GPU workers' host staging (Tensor::HostStaging): page-locked memory from the backend's cache,
// which copies to and from the device like any host memory, and which a dropped tensor gives
// back for the next one of its size.
TEST(CudaTensorTest, HostStagingIsPinnedAndReusedBySize) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  std::vector<float> values(5000);
  std::iota(values.begin(), values.end(), 1.0F);
  const Tensor device = Tensor::FromVector<float>({5000}, values).To(Device::Cuda(0));
  const void* first = nullptr;
  {
    Tensor staged = Tensor::HostStaging(tensor::DType::kFloat32, {5000}, tensor::DeviceKind::kCuda);
    cudaPointerAttributes attributes{};
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, staged.raw()), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeHost) << "not page-locked";
    staged.CopyFrom(device);
    EXPECT_EQ(staged.data<float>()[4999], 5000.0F);
    Tensor back(tensor::DType::kFloat32, {5000}, Device::Cuda(0));
    back.CopyFrom(staged);
    EXPECT_EQ(back.To(Device::Cpu()).data<float>()[123], 124.0F);
    first = staged.raw();
  }
  const Tensor again =
      Tensor::HostStaging(tensor::DType::kFloat32, {5000}, tensor::DeviceKind::kCuda);
  EXPECT_EQ(again.raw(), first) << "the cache did not hand the buffer back";
}

// Uploads (the loader's batches): copies on the copy stream through pinned stages, more at once
// than there are stages, taken in another order than started, read by the tensor stream's work
// after Take; dropped uploads, taken or not, give their bytes back.
TEST(CudaTensorTest, UploadsArriveBeforeTheWorkQueuedAfterTheirTake) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  const uint64_t live_before = TensorMemory(0).live_bytes;
  std::vector<tensor::Tensor> hosts;
  std::vector<tensor::TensorUpload> uploads;
  for (int i = 0; i < 9; ++i) {
    std::vector<float> values(static_cast<size_t>(1000 * (i + 1)));
    std::iota(values.begin(), values.end(), static_cast<float>(i * 100000));
    hosts.push_back(
        tensor::Tensor::FromVector<float>({static_cast<int64_t>(values.size())}, values));
    uploads.push_back(tensor::TensorUpload::Start(hosts.back(), tensor::Device::Cuda(0)));
  }
  for (int i = 8; i >= 1; --i) {  // the first is dropped untaken
    // A kernel-free read on the tensor stream: a device copy, then back to the host.
    const tensor::Tensor on_device = uploads[static_cast<size_t>(i)].Take().Clone();
    const tensor::Tensor back = on_device.To(tensor::Device::Cpu());
    const tensor::Tensor& host = hosts[static_cast<size_t>(i)];
    ASSERT_EQ(back.numel(), host.numel());
    for (int64_t j = 0; j < host.numel(); ++j) {
      ASSERT_EQ(back.data<float>()[j], host.data<float>()[j]) << i << ", " << j;
    }
  }
  uploads.clear();
  EXPECT_EQ(TensorMemory(0).live_bytes, live_before);
}

TEST(CudaTensorTest, FreedBuffersServeTheNextTensorsOfTheirSize) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  const void* first = nullptr;
  {
    Tensor t(tensor::DType::kFloat32, {1000}, Device::Cuda(0));
    first = t.device_data<float>();
  }
  const uint64_t used = TensorPool(0).used_bytes();
  // 1000 and 1001 floats round to the same size; the freed buffer comes back, and the pool is
  // not asked again.
  Tensor again(tensor::DType::kFloat32, {1001}, Device::Cuda(0));
  EXPECT_EQ(again.device_data<float>(), first);
  EXPECT_EQ(TensorPool(0).used_bytes(), used);
}

// The counts PyTorch's memory_allocated / max_memory_allocated give: bytes held by tensors (as
// allocated, rounded up to 512), apart from what the cache keeps.
TEST(CudaTensorTest, MemoryStatsCountWhatTensorsHoldApartFromTheCache) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  const TensorMemoryStats before = TensorMemory(0);
  TensorMemoryStats held;
  {
    Tensor a(tensor::DType::kFloat32, {1 << 20}, Device::Cuda(0));  // 4 MiB
    Tensor b(tensor::DType::kFloat32, {1000}, Device::Cuda(0));     // 4000 -> 4096 bytes
    held = TensorMemory(0);
    EXPECT_EQ(held.live_bytes, before.live_bytes + (4U << 20) + 4096U);
    EXPECT_GE(held.peak_live_bytes, held.live_bytes);
  }
  // Freed, both go to the cache (earlier tests may have left buffers of these sizes there,
  // which a and b then took).
  const TensorMemoryStats after = TensorMemory(0);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(after.cached_bytes, held.cached_bytes + (4U << 20) + 4096U);
  EXPECT_GE(after.peak_live_bytes, before.live_bytes + (4U << 20) + 4096U);
  // A cached buffer lent again counts again.
  Tensor again(tensor::DType::kFloat32, {1 << 20}, Device::Cuda(0));
  EXPECT_EQ(TensorMemory(0).live_bytes, before.live_bytes + (4U << 20));
  EXPECT_EQ(TensorMemory(0).cached_bytes, after.cached_bytes - (4U << 20));
}

TEST(CudaTensorTest, OutOfMemoryStillSaysSoAfterTheCacheIsEmptied) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  { Tensor cached(tensor::DType::kFloat32, {4096}, Device::Cuda(0)); }
  try {
    Tensor huge(tensor::DType::kFloat32, {int64_t{1} << 48}, Device::Cuda(0));
    FAIL() << "a petabyte tensor was made";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
    EXPECT_THAT(error.what(), HasSubstr("is out of memory"));
  }
  Tensor after(tensor::DType::kFloat32, {4096}, Device::Cuda(0));
  EXPECT_NE(after.device_data<float>(), nullptr);
}

}  // namespace
}  // namespace autodist::gpu
