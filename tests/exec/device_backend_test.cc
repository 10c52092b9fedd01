// The registry of device backends: the CPU needs none, a kind without a registered backend (this
// test binary links no gpu/ library) is an error naming the flag that asked, and a registered
// installer gets the count and the field.
#include "runtime/exec/device_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "runtime/common/error.h"
#include "tests/error_of.h"

namespace autodist::exec {
namespace {

using tensor::DeviceKind;
using ::testing::HasSubstr;

TEST(DeviceBackendTest, TheCpuNeedsNoBackend) {
  EXPECT_EQ(UseDevices(DeviceKind::kCpu, 1, "--x"), "");
}

// One test, in order: the registry is global to the process.
TEST(DeviceBackendTest, AMissingBackendIsNamedThenARegisteredOneIsUsed) {
  const Error missing =
      autodist::testing::ErrorOf([] { UseDevices(DeviceKind::kCuda, 1, "--device cuda"); });
  EXPECT_EQ(missing.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(missing.what(), HasSubstr("--device cuda: this program was built without the cuda "
                                        "backend"));

  int asked = 0;
  std::string field;
  RegisterDeviceBackend(DeviceKind::kCuda, [&](int count, std::string_view from) {
    asked = count;
    field = from;
    return std::string("2 fake GPUs");
  });
  EXPECT_EQ(UseDevices(DeviceKind::kCuda, 2, "resources.gpusPerWorker"), "2 fake GPUs");
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(field, "resources.gpusPerWorker");

  const Error none = autodist::testing::ErrorOf([] { UseDevices(DeviceKind::kCuda, 0, "--n"); });
  EXPECT_EQ(none.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(none.what(), HasSubstr("--n: at least 1 cuda device is needed, got 0"));

  const Error twice = autodist::testing::ErrorOf(
      [] { RegisterDeviceBackend(DeviceKind::kCuda, [](int, std::string_view) { return ""; }); });
  EXPECT_EQ(twice.code(), ErrorCode::kInternal);
  const Error cpu = autodist::testing::ErrorOf(
      [] { RegisterDeviceBackend(DeviceKind::kCpu, [](int, std::string_view) { return ""; }); });
  EXPECT_EQ(cpu.code(), ErrorCode::kInternal);
}

TEST(DeviceIdentityTest, TheCpuIsItselfAndADeviceIsWhatItsBackendSays) {
  EXPECT_EQ(DeviceIdentity(tensor::Device::Cpu()), "cpu");
  const Error missing = autodist::testing::ErrorOf([] { DeviceIdentity(tensor::Device::Cuda(1)); });
  EXPECT_EQ(missing.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(missing.what(), HasSubstr("cuda:1: this program was built without the cuda backend"));

  RegisterDeviceIdentifier(DeviceKind::kCuda,
                           [](int index) { return fmt::format("0000:0{}:00.0", index); });
  EXPECT_EQ(DeviceIdentity(tensor::Device::Cuda(1)), "0000:01:00.0");
  const Error twice = autodist::testing::ErrorOf(
      [] { RegisterDeviceIdentifier(DeviceKind::kCuda, [](int) { return ""; }); });
  EXPECT_EQ(twice.code(), ErrorCode::kInternal);
  EXPECT_THAT(twice.what(), HasSubstr("a second cuda device identifier"));
}

}  // namespace
}  // namespace autodist::exec
