// The GPU workers' all-reduce (one rank per replica, fusion buffers, the mean and the optimizer
// where the replicas are, the finiteness check on the communication threads:
// sync/device_all_reduce_part.h) run end to end on the CPU through AUTODIST_REPLICA_RANKS_ON_CPU:
// jobs of several workers and replicas per worker, which a one-GPU machine cannot run, against the
// same jobs on the host path. Start, the checkpoint at the end, every compressor's flat form on the
// CPU and an embedding's row-sparse gradients included.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "runtime/cli/worker_collectives.h"
#include "tests/launcher/run_job_test_util.h"

namespace autodist::launcher {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The hook for one scope.
class ReplicaRanksOnCpu : public ScopedEnvironment {
 public:
  ReplicaRanksOnCpu() : ScopedEnvironment(cli::kReplicaRanksOnCpuEnv, "1") {}
};

struct PathRun {
  RunOutcome outcome;
  std::map<std::string, std::vector<float>> variables;  // the checkpoint at the end
};

PathRun RunPath(const JobParams& params, bool replica_ranks) {
  TempDir dir;
  const std::string checkpoints = dir / "ckpt";
  const cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(params, checkpoints)));
  PathRun run;
  std::optional<ReplicaRanksOnCpu> hook;
  if (replica_ranks) hook.emplace();
  run.outcome = RunManifest(options);
  EXPECT_EQ(run.outcome.exit_code, 0) << run.outcome.err << run.outcome.out;
  if (run.outcome.exit_code == 0) run.variables = CheckpointVariables(checkpoints);
  run.outcome.out += ReadText(dir / "logs/worker-0.log");
  return run;
}

JobParams AllReduce(const std::string& model, int replicas_per_worker) {
  JobParams params;
  params.name = "replica-ranks";
  params.model = model;
  params.builder = "AllReduce";
  params.parameter_servers = 0;
  params.replicas_per_worker = replicas_per_worker;
  params.optimizer = "name: adam\n      lr: 0.01";
  return params;
}

// One replica per worker: each replica's rank is its worker's, so both paths add the same
// numbers in the same order, and the checkpoint has the same bits.
class OneReplicaPerWorker : public ::testing::TestWithParam<const char*> {};

TEST_P(OneReplicaPerWorker, TrainsTheHostPathsBits) {
  JobParams params = AllReduce("mlp", 1);
  params.strategy_options = GetParam();
  const PathRun host = RunPath(params, false);
  const PathRun device = RunPath(params, true);
  EXPECT_THAT(device.outcome.out, HasSubstr("all-reduce: one Gloo rank per replica on the CPU"));
  EXPECT_THAT(host.outcome.out, Not(HasSubstr("one Gloo rank per replica")));
  ASSERT_FALSE(device.variables.empty());
  ExpectSameVariables(host.variables, device.variables, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Compressors, OneReplicaPerWorker,
                         ::testing::Values("", "      compressor: HorovodCompressorEF\n",
                                           "      compressor: PowerSGDCompressor\n",
                                           "      compressor: TopKCompressorEF\n"
                                           "      topkFraction: 0.1\n"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           const std::string options = param.param;
                           if (options.empty()) return std::string("NoneCompressor");
                           const size_t name = options.find(": ") + 2;
                           return options.substr(name, options.find('\n') - name);
                         });

// Two replicas per worker: every replica is a rank, so the sums are added in another order than
// the host path's (a worker's replicas first): close, not the same bits. With an embedding's
// row-sparse gradients, and with BatchNorm's replica-local statistics, reduced for the evaluation
// at the end.
class TwoReplicasPerWorker : public ::testing::TestWithParam<const char*> {};

TEST_P(TwoReplicasPerWorker, StayCloseToTheHostPath) {
  JobParams params = AllReduce(GetParam(), 2);
  params.eval = true;
  const PathRun host = RunPath(params, false);
  const PathRun device = RunPath(params, true);
  EXPECT_THAT(device.outcome.out, HasSubstr("one Gloo rank per replica"));
  ASSERT_FALSE(device.variables.empty());
  ExpectSameVariables(host.variables, device.variables, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Models, TwoReplicasPerWorker, ::testing::Values("embedding", "cnn"));

// Resuming: 3 steps, then the job again to step 5 from its checkpoint (variables and Adam's slots
// restored into every replica's optimizer), ends with the bits of 5 steps at once.
TEST(RunReplicaRanksTest, ResumesFromItsCheckpointToTheBitsOfAnUnbrokenRun) {
  const ReplicaRanksOnCpu hook;
  JobParams params = AllReduce("mlp", 1);
  params.steps = 5;
  const PathRun unbroken = RunPath(params, true);
  ASSERT_FALSE(unbroken.variables.empty());

  TempDir dir;
  const std::string checkpoints = dir / "ckpt";
  params.steps = 3;
  const RunOutcome first =
      RunManifest(OptionsFor(dir, WriteManifest(dir, JobYaml(params, checkpoints))));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  params.steps = 5;
  std::string resumed = JobYaml(params, checkpoints);
  const size_t resume = resumed.find("resume: false");
  ASSERT_NE(resume, std::string::npos);
  resumed.replace(resume, 13, "resume: true");
  const RunOutcome second = RunManifest(OptionsFor(dir, WriteManifest(dir, resumed)));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(ReadText(dir / "logs/worker-0.log"), HasSubstr("one Gloo rank per replica"));
  ExpectSameVariables(unbroken.variables, CheckpointVariables(checkpoints), 0.0);
}

// A plan the path cannot take is refused, naming the hook and the reason, not run on the host
// path behind the test's back.
TEST(RunReplicaRanksTest, APlanThePathCannotTakeIsRefused) {
  JobParams params = AllReduce("mlp", 1);
  params.strategy_options = "      allReduceSpec: RING\n";
  TempDir dir;
  const cli::RunOptions options =
      OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt")));
  const ReplicaRanksOnCpu hook;
  const RunOutcome outcome = RunManifest(options);
  EXPECT_NE(outcome.exit_code, 0);
  EXPECT_THAT(outcome.err, HasSubstr("AUTODIST_REPLICA_RANKS_ON_CPU asks for the all-reduce on "
                                     "the replicas' devices, which this plan cannot take"));
  EXPECT_THAT(outcome.err, HasSubstr("spec RING"));
}

}  // namespace
}  // namespace autodist::launcher
