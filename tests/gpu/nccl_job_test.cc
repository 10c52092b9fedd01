// A GPU worker's all-reduce over NCCL, on the one GPU of the device machine: a job of one worker
// with gpusPerWorker: 1 takes the NCCL path (one rank; worker_collectives.h) and keeps its
// gradients, their fusion buffers, the mean and the optimizer on the GPU
// (sync/device_all_reduce_part.h), float16 compression with error feedback included
// (gpu/compress/half_flat_compressor.h). Over 50 steps its losses and variables match the CPU
// run (1e-4 relative; 1e-3 with float16 on the wire). One rank shows the path from end to end, not
// a multi-rank sum: the CPU tests check the part's arithmetic on several ranks (tests/sync). Needs
// a GPU and NCCL (SKIPPED without a GPU; not built without NCCL).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/gpu/gpu_job_test_util.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::launcher {
namespace {

using testing::GpuJobCase;
using ::testing::HasSubstr;
using ::testing::Not;

struct NcclCase {
  const char* name;
  const char* strategy_options;
  // float16 on the wire turns the GPU's last-bit differences from the CPU into half-precision
  // steps now and then.
  double tolerance;
};

class NcclJob : public ::testing::TestWithParam<NcclCase> {};

TEST_P(NcclJob, OneGpuWorkerReducesOverNcclAndMatchesTheCpuRunOver50Steps) {
  AUTODIST_SKIP_WITHOUT_GPU();
  TempDir dir;
  const GpuJobCase job{"AllReduce", "mlp", 0, 1, GetParam().strategy_options};
  const testing::JobRun cpu = testing::RunJobOn(job, false, dir);
  const testing::JobRun gpu = testing::RunJobOn(job, true, dir);
  EXPECT_THAT(gpu.logs, HasSubstr("all-reduce: NCCL between the job's GPUs"));
  EXPECT_THAT(gpu.logs, Not(HasSubstr("through host memory")));
  testing::ExpectRunsMatch(cpu, gpu, 50, GetParam().tolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Compressors, NcclJob,
    ::testing::Values(NcclCase{"NoneCompressor", "", 1e-4},
                      NcclCase{"HorovodCompressorEF", "      compressor: HorovodCompressorEF\n",
                               1e-3}),
    [](const ::testing::TestParamInfo<NcclCase>& param) { return param.param.name; });

}  // namespace
}  // namespace autodist::launcher
