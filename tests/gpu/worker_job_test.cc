// GPU workers in a job, on one GPU: `autodist run` with two workers of gpusPerWorker: 1 shares
// the machine's one GPU between them. NCCL refuses two ranks on one GPU, so each worker stages
// its gradients and variables through host memory to Gloo or the parameter servers
// (exec/host_staged_synchronizer.h), and says so. Over 50 steps the chief's per-step losses and
// the trained variables match the same job's run on the CPU (fp32: 1e-4 relative), for an
// all-reduce and a parameter-server strategy. Needs a GPU (SKIPPED without one).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/gpu/gpu_job_test_util.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::launcher {
namespace {

using testing::GpuJobCase;
using ::testing::HasSubstr;

class GpuWorkerJob : public ::testing::TestWithParam<GpuJobCase> {};

TEST_P(GpuWorkerJob, TwoWorkersSharingTheGpuMatchTheCpuRunOver50Steps) {
  AUTODIST_SKIP_WITHOUT_GPU();
  TempDir dir;
  const testing::JobRun cpu = testing::RunJobOn(GetParam(), false, dir);
  const testing::JobRun gpu = testing::RunJobOn(GetParam(), true, dir);
  testing::ExpectRunsMatch(cpu, gpu, 50, 1e-4);
  if (std::string(GetParam().builder) == "AllReduce") {
    EXPECT_THAT(gpu.logs, HasSubstr("replicas 0 and 1 share GPU"));
  }
}

INSTANTIATE_TEST_SUITE_P(Builders, GpuWorkerJob,
                         ::testing::Values(GpuJobCase{"AllReduce", "mlp", 0},
                                           GpuJobCase{"PS", "mlp", 1},
                                           GpuJobCase{"PS", "embedding", 1}),
                         [](const ::testing::TestParamInfo<GpuJobCase>& param) {
                           return std::string(param.param.builder) + "_" + param.param.model;
                         });

}  // namespace
}  // namespace autodist::launcher
