// The CUDA backend as a program finds it (runtime/exec/device_backend.h; gpu/backend registers
// it): asking for GPUs checks they are here, naming the flag or field that asked, and with them a
// trainer runs on cuda:0 with nothing else installed by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "runtime/common/error.h"
#include "runtime/exec/device_backend.h"
#include "runtime/exec/trainer.h"
#include "tests/error_of.h"
#include "tests/exec/trainer_test_util.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::gpu {
namespace {

using ::testing::HasSubstr;

TEST(CudaBackendTest, MoreGpusThanTheMachineHasAreRefusedNamingTheField) {
  const int present = static_cast<int>(DiscoverGpus().gpus.size());
  const Error error = autodist::testing::ErrorOf(
      [&] { exec::UseDevices(tensor::DeviceKind::kCuda, present + 1, "resources.gpusPerWorker"); });
  EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(error.what(),
              HasSubstr("resources.gpusPerWorker: " + std::to_string(present + 1) + " GPU"));
  EXPECT_THAT(error.what(), HasSubstr("asked for, but this machine has "));
}

TEST(CudaBackendTest, TheInstalledBackendTrainsOnTheGpu) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const std::string described = exec::UseDevices(tensor::DeviceKind::kCuda, 1, "--device cuda");
  EXPECT_THAT(described, HasSubstr("1 GPU"));
  exec::TrainerOptions options = exec::testing::MlpOptions();
  options.steps = 5;
  options.device = tensor::Device::Cuda(0);
  const exec::TrainResult result = exec::Train(options, [](const std::string&) {});
  EXPECT_EQ(result.steps, 5);
  EXPECT_TRUE(std::isfinite(result.last_loss));
}

}  // namespace
}  // namespace autodist::gpu
