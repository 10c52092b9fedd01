// The GPU inventory and the errors of a request for GPUs. These run everywhere: on a machine
// without a GPU they check the error a user gets, with one they check what was found.
#include "gpu/device/devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "gpu/device/cuda_error.h"
#include "runtime/common/error.h"

namespace autodist::gpu {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

Error ErrorOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "no error was thrown";
  return Error(ErrorCode::kInternal, "");
}

TEST(DevicesTest, RequestBeyondWhatIsPresentNamesTheFieldAndWhatWasFound) {
  const GpuInventory inventory = DiscoverGpus();
  const int present = static_cast<int>(inventory.gpus.size());
  const Error error = ErrorOf([&] { RequireGpus("resources.gpusPerWorker", present + 1); });
  EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(error.what(), StartsWith("resources.gpusPerWorker: " + std::to_string(present + 1) +
                                       (present + 1 == 1 ? " GPU" : " GPUs") + " asked for"));
  if (present == 0) {
    // Why there is none: no driver or no device, in CUDA's words.
    EXPECT_FALSE(inventory.why_none.empty());
    EXPECT_THAT(error.what(), HasSubstr("this machine has none: " + inventory.why_none));
    EXPECT_THAT(error.what(), HasSubstr("cudaError"));
  } else {
    EXPECT_TRUE(inventory.why_none.empty());
    EXPECT_THAT(error.what(), HasSubstr(inventory.gpus.front().name));
  }
}

TEST(DevicesTest, RequestWithinWhatIsPresentReturnsTheInventory) {
  const GpuInventory inventory = DiscoverGpus();
  if (inventory.gpus.empty()) GTEST_SKIP() << "needs a GPU: " << inventory.why_none;
  const GpuInventory found = RequireGpus("--device cuda", 1);
  ASSERT_EQ(found.gpus.size(), inventory.gpus.size());
  EXPECT_GT(found.gpus[0].total_bytes, 0U);
  EXPECT_GT(found.gpus[0].multiprocessors, 0);
  EXPECT_THAT(DescribeGpus(found), HasSubstr(found.gpus[0].name));
}

TEST(DevicesTest, RequestForNoGpuIsAnInvalidCount) {
  const Error error = ErrorOf([] { RequireGpus("resources.gpusPerWorker", 0); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("resources.gpusPerWorker: the number of GPUs must be at "
                                      "least 1, got 0"));
}

TEST(CudaErrorTest, NamesWhatFailedAndMapsTheCode) {
  EXPECT_NO_THROW(CheckCuda(cudaSuccess, "nothing"));
  const Error oom = ErrorOf([] { CheckCuda(cudaErrorMemoryAllocation, "allocating 8 bytes"); });
  EXPECT_EQ(oom.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(oom.what(), StartsWith("allocating 8 bytes: cudaErrorMemoryAllocation: "));
  const Error none = ErrorOf([] { CheckCuda(cudaErrorNoDevice, "selecting GPU 0"); });
  EXPECT_EQ(none.code(), ErrorCode::kFailedPrecondition);
  const Error other = ErrorOf([] { CheckCuda(cudaErrorLaunchFailure, "a kernel"); });
  EXPECT_EQ(other.code(), ErrorCode::kInternal);
  EXPECT_THAT(other.what(), HasSubstr("cudaErrorLaunchFailure"));
}

}  // namespace
}  // namespace autodist::gpu
