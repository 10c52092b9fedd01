// GPU workers in a job, on one GPU, against the same job's run on the CPU over 50 steps (the
// chief's per-step losses and the trained variables). Needs a GPU (SKIPPED without one).
//
// * Two workers of gpusPerWorker: 1 share the machine's one GPU. NCCL refuses two ranks on one
//   GPU, so each worker stages its gradients and variables through host memory to Gloo or the
//   parameter servers (exec/host_staged_synchronizer.h), and says so; fp32: 1e-4 relative, for
//   an all-reduce and a parameter-server strategy; and pushes compressed on the GPU before the
//   copy (HorovodCompressorEF, TopKCompressorEF): 1e-3.
// * One worker takes the NCCL path (one rank; worker_collectives.h) and keeps its gradients,
//   their fusion buffers, the mean and the optimizer on the GPU (sync/device_all_reduce_part.h),
//   float16 compression with error feedback included (gpu/compress/half_flat_compressor.h): 1e-4
//   relative, 1e-3 with float16 on the wire and with PowerSGD (powersgd_flat_compressor.h); an
//   embedding's row-sparse gradients too (1e-4). One rank shows the path from end to end, not a
//   multi-rank sum: the CPU tests check the part's arithmetic on several ranks (tests/sync).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/gpu/gpu_job_test_util.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::launcher {
namespace {

using testing::GpuJobCase;
using ::testing::HasSubstr;
using ::testing::Not;

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

struct PushCase {
  const char* name;
  const char* strategy_options;
};

class CompressedPushJob : public ::testing::TestWithParam<PushCase> {};

// Two GPU workers push to a parameter server compressed on their GPU (gpu/compress/
// push_streams.h), the residual kept there; the CPU run compresses the same pushes on the host,
// bit for bit the same encoder, so only the GPU's last-bit differences in the gradients remain,
// now and then a float16 step or another top-k pick: 1e-3.
TEST_P(CompressedPushJob, PushesCompressedOnTheGpuMatchTheCpuRunOver50Steps) {
  AUTODIST_SKIP_WITHOUT_GPU();
  TempDir dir;
  const GpuJobCase job{"PS", "mlp", 1, 2, GetParam().strategy_options};
  const testing::JobRun cpu = testing::RunJobOn(job, false, dir);
  const testing::JobRun gpu = testing::RunJobOn(job, true, dir);
  EXPECT_THAT(gpu.logs, HasSubstr("are compressed on the cuda devices, before the copy"));
  EXPECT_THAT(cpu.logs, Not(HasSubstr("compressed on the")));
  testing::ExpectRunsMatch(cpu, gpu, 50, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(
    Compressors, CompressedPushJob,
    ::testing::Values(PushCase{"HorovodCompressorEF", "      compressor: HorovodCompressorEF\n"},
                      PushCase{"TopKCompressorEF",
                               "      compressor: TopKCompressorEF\n      topkFraction: 0.1\n"}),
    [](const ::testing::TestParamInfo<PushCase>& param) { return param.param.name; });

struct NcclCase {
  const char* name;
  const char* strategy_options;
  // float16 on the wire turns the GPU's last-bit differences from the CPU into half-precision
  // steps now and then.
  double tolerance;
  const char* model = "mlp";
};

class NcclJob : public ::testing::TestWithParam<NcclCase> {};

TEST_P(NcclJob, OneGpuWorkerReducesOverNcclAndMatchesTheCpuRunOver50Steps) {
  AUTODIST_SKIP_WITHOUT_GPU();
  if (!AUTODIST_WITH_NCCL) GTEST_SKIP() << "this build has no NCCL (the toolkit lacked nccl.h)";
  TempDir dir;
  const GpuJobCase job{"AllReduce", GetParam().model, 0, 1, GetParam().strategy_options};
  const testing::JobRun cpu = testing::RunJobOn(job, false, dir);
  const testing::JobRun gpu = testing::RunJobOn(job, true, dir);
  EXPECT_THAT(gpu.logs, HasSubstr("all-reduce: NCCL between the job's GPUs"));
  EXPECT_THAT(gpu.logs, Not(HasSubstr("through host memory")));
  testing::ExpectRunsMatch(cpu, gpu, 50, GetParam().tolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Compressors, NcclJob,
    ::testing::Values(
        NcclCase{"NoneCompressor", "", 1e-4},
        NcclCase{"HorovodCompressorEF", "      compressor: HorovodCompressorEF\n", 1e-3},
        // Its products and Gram-Schmidt on the GPU sum in another order.
        NcclCase{"PowerSGDCompressor", "      compressor: PowerSGDCompressor\n", 1e-3},
        // The table's rows are all-gathered and merged on the host, then applied on the GPU
        // (sync/device_all_reduce_part.h).
        NcclCase{"RowSparseEmbedding", "", 1e-4, "embedding"}),
    [](const ::testing::TestParamInfo<NcclCase>& param) { return param.param.name; });

}  // namespace
}  // namespace autodist::launcher
