// Devices and tensors on them, on the CPU: the device names users write, and what a tensor on a
// device other than the CPU does, with a stand-in for a GPU's memory that lives in host memory
// (the real one is tested in tests/gpu on a GPU machine).
#include "runtime/tensor/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/tensor/tensor.h"
#include "tests/tensor/host_backed_memory.h"

namespace autodist::tensor {
namespace {

using ::testing::HasSubstr;
using testing::HostBackedMemory;
using testing::StagingMemory;

TEST(DeviceTest, NamesParseAndPrint) {
  EXPECT_EQ(ParseDevice("cpu", "--device"), Device::Cpu());
  EXPECT_EQ(ParseDevice("cuda", "--device"), Device::Cuda(0));
  EXPECT_EQ(ParseDevice("cuda:3", "--device"), Device::Cuda(3));
  EXPECT_EQ(DeviceName(Device::Cuda(3)), "cuda:3");
  EXPECT_EQ(DeviceName(Device::Cpu()), "cpu");
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:1x", "CPU", ""}) {
    try {
      ParseDevice(bad, "--device");
      ADD_FAILURE() << bad << " parsed";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
      EXPECT_THAT(error.what(), HasSubstr(std::string("--device: unknown device \"") + bad +
                                          "\"; expected cpu, cuda or cuda:N"));
    }
  }
}

TEST(DeviceTest, TensorsOnADeviceGoThroughItsMemoryAndAreNotReadAsHostMemory) {
  HostBackedMemory memory;
  InstallDeviceMemory(DeviceKind::kCuda, &memory);
  const Tensor host = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor device = host.To(Device::Cuda(1));
  EXPECT_EQ(device.device(), Device::Cuda(1));
  EXPECT_EQ(device.shape(), host.shape());
  EXPECT_EQ(memory.allocations, 1);
  EXPECT_EQ(memory.copies, 1);
  try {
    (void)device.data<float>();
    ADD_FAILURE() << "a device tensor was read as host memory";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInternal);
    EXPECT_THAT(error.what(), HasSubstr("a tensor on cuda:1 read as host memory"));
  }
  EXPECT_NE(device.device_data<float>(), nullptr);
  EXPECT_THROW((void)device.device_data<int64_t>(), Error);  // the dtype is still checked

  // To the same device is the tensor itself; Clone copies on the device.
  EXPECT_TRUE(device.To(Device::Cuda(1)).SharesStorageWith(device));
  Tensor copy = device.Clone();
  EXPECT_FALSE(copy.SharesStorageWith(device));
  EXPECT_EQ(copy.device(), Device::Cuda(1));
  copy.SetZero();
  EXPECT_EQ(memory.zeroes, 1);

  const Tensor back = device.To(Device::Cpu());
  EXPECT_EQ(back.device(), Device::Cpu());
  EXPECT_EQ(back.data<float>()[5], 6.0F);
  const Tensor zeros = copy.To(Device::Cpu());
  EXPECT_EQ(zeros.data<float>()[0], 0.0F);
  InstallDeviceMemory(DeviceKind::kCuda, nullptr);
}

// Host copies of device tensors that cross every step live in the device kind's staging memory
// where it has one (pinned for CUDA), and in ordinary host memory otherwise.
TEST(DeviceTest, HostStagingTensorsUseTheKindsStagingMemoryWhereItHasOne) {
  // No backend installed for the kind, or the CPU: an ordinary host tensor.
  ASSERT_FALSE(HasMemory(DeviceKind::kCuda));
  EXPECT_TRUE(HasMemory(DeviceKind::kCpu));
  const Tensor plain = Tensor::HostStaging(DType::kFloat32, {3}, DeviceKind::kCuda);
  EXPECT_EQ(plain.device(), Device::Cpu());
  EXPECT_EQ(plain.numel(), 3);

  HostBackedMemory without;  // installed, but offers no staging memory
  InstallDeviceMemory(DeviceKind::kCuda, &without);
  EXPECT_EQ(Tensor::HostStaging(DType::kFloat32, {3}, DeviceKind::kCuda).device(), Device::Cpu());
  EXPECT_EQ(without.allocations, 0);

  StagingMemory memory;
  InstallDeviceMemory(DeviceKind::kCuda, &memory);
  Tensor staged = Tensor::HostStaging(DType::kInt64, {2, 5}, DeviceKind::kCuda);
  EXPECT_EQ(staged.device(), Device::Cpu());
  EXPECT_EQ(staged.dtype(), DType::kInt64);
  EXPECT_EQ(staged.shape(), (Shape{2, 5}));
  EXPECT_EQ(memory.staged_bytes, 80U);
  ASSERT_EQ(memory.lent.size(), 1U);
  EXPECT_EQ(static_cast<const void*>(staged.data<int64_t>()), memory.lent[0]);
  staged.data<int64_t>()[9] = 42;  // host memory: read and written as such
  EXPECT_EQ(staged.GetAsDouble(9), 42.0);
  // The CPU's own kind has no staging; an empty tensor needs none.
  (void)Tensor::HostStaging(DType::kFloat32, {4}, DeviceKind::kCpu);
  (void)Tensor::HostStaging(DType::kFloat32, {0}, DeviceKind::kCuda);
  EXPECT_EQ(memory.lent.size(), 1U);
  InstallDeviceMemory(DeviceKind::kCuda, nullptr);
  EXPECT_FALSE(HasMemory(DeviceKind::kCuda));
}

// CopyFrom overwrites a tensor where it lies, whichever side each is on: no new storage.
TEST(DeviceTest, CopyFromKeepsTheTargetsStorageOnEitherSide) {
  HostBackedMemory memory;
  InstallDeviceMemory(DeviceKind::kCuda, &memory);
  const Tensor host = Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4});
  Tensor device(DType::kFloat32, {4}, Device::Cuda(0));  // same elements, another shape
  const void* device_storage = device.device_data<float>();
  device.CopyFrom(host);
  EXPECT_EQ(device.device_data<float>(), device_storage);
  EXPECT_EQ(memory.allocations, 1);
  EXPECT_EQ(memory.copies, 1);

  Tensor back = Tensor::Zeros(DType::kFloat32, {2, 2});
  const float* host_storage = back.data<float>();
  back.CopyFrom(device);
  EXPECT_EQ(back.data<float>(), host_storage);
  EXPECT_EQ(std::vector<float>(back.data<float>(), back.data<float>() + 4),
            (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(memory.copies, 2);

  // Host to host is a plain copy; onto itself, nothing.
  Tensor other = Tensor::Zeros(DType::kFloat32, {4});
  other.CopyFrom(host);
  EXPECT_EQ(other.data<float>()[3], 4.0F);
  other.CopyFrom(other);
  EXPECT_EQ(memory.copies, 2);

  for (const Tensor& wrong :
       {Tensor::Zeros(DType::kFloat32, {5}), Tensor::Zeros(DType::kInt64, {4})}) {
    try {
      device.CopyFrom(wrong);
      ADD_FAILURE() << "copied a mismatched tensor";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kInternal);
      EXPECT_THAT(error.what(), HasSubstr("into a float32 tensor of 4"));
    }
  }
  InstallDeviceMemory(DeviceKind::kCuda, nullptr);
}

// An upload without a device path of its own is a copy at once; taking it gives the tensor on the
// device, once; it only goes from the host to a device.
TEST(DeviceTest, AnUploadIsTakenOnceOnTheDevice) {
  HostBackedMemory memory;
  InstallDeviceMemory(DeviceKind::kCuda, &memory);
  const Tensor host = Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4});
  TensorUpload upload = TensorUpload::Start(host, Device::Cuda(0));
  EXPECT_EQ(memory.copies, 1);
  EXPECT_TRUE(upload.pending());
  const Tensor taken = upload.Take();
  EXPECT_FALSE(upload.pending());
  EXPECT_EQ(taken.device(), Device::Cuda(0));
  EXPECT_EQ(taken.shape(), host.shape());
  const Tensor back = taken.To(Device::Cpu());
  EXPECT_EQ(std::vector<float>(back.data<float>(), back.data<float>() + 4),
            (std::vector<float>{1, 2, 3, 4}));
  EXPECT_THROW(upload.Take(), Error);
  EXPECT_THROW(TensorUpload::Start(taken, Device::Cuda(0)), Error);
  EXPECT_THROW(TensorUpload::Start(host, Device::Cpu()), Error);
  // An empty tensor still gets storage on the device.
  const Tensor empty(DType::kFloat32, {0, 3});
  EXPECT_EQ(TensorUpload::Start(empty, Device::Cuda(0)).Take().shape(), (Shape{0, 3}));
  InstallDeviceMemory(DeviceKind::kCuda, nullptr);
}

TEST(DeviceTest, ATensorOnADeviceWithoutItsBackendIsAClearError) {
  InstallDeviceMemory(DeviceKind::kCuda, nullptr);
  try {
    Tensor t(DType::kFloat32, {4}, Device::Cuda(0));
    ADD_FAILURE() << "a tensor was made on a device without a backend";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
    EXPECT_THAT(error.what(), HasSubstr("tensors on cuda:0 need the cuda backend, which this "
                                        "program does not have"));
  }
}

}  // namespace
}  // namespace autodist::tensor
