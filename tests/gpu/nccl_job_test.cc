// A GPU worker's all-reduce over NCCL, on the one GPU of the device machine: a job of one worker
// with gpusPerWorker: 1 takes the NCCL path (one rank; worker_collectives.h) and keeps its
// gradients, their fusion buffers, the mean and the optimizer on the GPU
// (sync/device_all_reduce_part.h). Over 50 steps its losses and variables match the CPU run
// (fp32: 1e-4 relative). One rank shows the path from end to end, not a multi-rank sum: the CPU
// tests check the part's arithmetic on several ranks (tests/sync). Needs a GPU and NCCL
// (SKIPPED without a GPU; not built without NCCL).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/gpu/gpu_job_test_util.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::launcher {
namespace {

using testing::GpuJobCase;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(NcclJob, OneGpuWorkerReducesOverNcclAndMatchesTheCpuRunOver50Steps) {
  AUTODIST_SKIP_WITHOUT_GPU();
  TempDir dir;
  const GpuJobCase job{"AllReduce", "mlp", 0, 1};
  const testing::JobRun cpu = testing::RunJobOn(job, false, dir);
  const testing::JobRun gpu = testing::RunJobOn(job, true, dir);
  EXPECT_THAT(gpu.logs, HasSubstr("all-reduce: NCCL between the job's GPUs"));
  EXPECT_THAT(gpu.logs, Not(HasSubstr("through host memory")));
  testing::ExpectRunsMatch(cpu, gpu, 50, 1e-4);
}

}  // namespace
}  // namespace autodist::launcher
