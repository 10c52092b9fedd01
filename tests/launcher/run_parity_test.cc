// The correctness contract of synchronous data parallelism, end to end: `autodist run` with N
// workers x batch b under every parameter-server builder ends with the same parameters as one
// process training with batch N*b over the same samples (1e-5 relative) — on a dense MLP, and on
// an embedding model whose sparse gradients are cut across partitioned shards.
#include <gtest/gtest.h>

#include "runtime/exec/job_options.h"
#include "runtime/exec/trainer.h"
#include "runtime/job/job_parser.h"
#include "tests/launcher/run_job_test_util.h"

namespace autodist::launcher {
namespace {

// The single-process reference: the same manifest with one worker and the global batch.
std::map<std::string, std::vector<float>> OneProcessReference(JobParams params,
                                                              const TempDir& dir) {
  params.batch *= params.workers * params.replicas_per_worker;
  params.workers = 1;
  params.replicas_per_worker = 1;
  const std::string checkpoints = dir / "reference-ckpt";
  const job::JobSpec job =
      job::ParseJob(JobYaml(params, checkpoints), "reference.yaml", dir.path().string());
  exec::Train(exec::TrainerOptionsFromJob(job, 0, 1, 1), [](const std::string&) {});
  return CheckpointVariables(checkpoints);
}

void ExpectDistributedMatchesOneProcess(const JobParams& params) {
  TempDir dir;
  const std::string checkpoints = dir / "ckpt";
  const RunOutcome outcome =
      RunManifest(OptionsFor(dir, WriteManifest(dir, JobYaml(params, checkpoints))));
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err << outcome.out;
  EXPECT_NE(outcome.out.find("succeeded"), std::string::npos) << outcome.out;
  ExpectSameVariables(OneProcessReference(params, dir), CheckpointVariables(checkpoints), 1e-5);
}

struct Case {
  const char* builder;
  const char* model;
  int parameter_servers;
};

class PsBuilderParity : public ::testing::TestWithParam<Case> {};

TEST_P(PsBuilderParity, TwoWorkersMatchOneProcessWithTheGlobalBatch) {
  JobParams params;
  params.builder = GetParam().builder;
  params.model = GetParam().model;
  params.parameter_servers = GetParam().parameter_servers;
  ExpectDistributedMatchesOneProcess(params);
}

INSTANTIATE_TEST_SUITE_P(Builders, PsBuilderParity,
                         ::testing::Values(Case{"PS", "mlp", 1}, Case{"PSLoadBalancing", "mlp", 2},
                                           Case{"PartitionedPS", "mlp", 2},
                                           Case{"UnevenPartitionedPS", "mlp", 2},
                                           Case{"PS", "embedding", 1},
                                           Case{"PSLoadBalancing", "embedding", 0},
                                           Case{"PartitionedPS", "embedding", 2},
                                           Case{"UnevenPartitionedPS", "embedding", 1}),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return std::string(param.param.builder) + "_" + param.param.model + "_" +
                                  std::to_string(param.param.parameter_servers) + "ps";
                         });

TEST(RunParityTest, InGraphReplicasWithLocalProxyMatch) {
  JobParams params;
  params.model = "embedding";
  params.builder = "PartitionedPS";
  params.replicas_per_worker = 2;
  params.batch = 4;
  params.strategy_options = "      localProxyVariable: true\n";
  ExpectDistributedMatchesOneProcess(params);
}

TEST(RunParityTest, InGraphReplicasPushingEachForThemselvesMatch) {
  JobParams params;
  params.model = "mlp";
  params.builder = "PSLoadBalancing";
  params.replicas_per_worker = 2;
  params.batch = 4;
  params.strategy_options = "      localProxyVariable: false\n";
  ExpectDistributedMatchesOneProcess(params);
}

TEST(RunParityTest, AdamStateLivesOnTheParameterServers) {
  JobParams params;
  params.model = "mlp";
  params.builder = "PartitionedPS";
  params.parameter_servers = 2;
  // eps 1e-3 rather than 1e-8: Adam divides by sqrt(v) + eps, which for elements whose gradient
  // is near zero turns the rounding difference of the two summation orders (two replica sums vs
  // one batch mean) into a full-size step. The state handling under test is the same.
  params.optimizer = "name: adam\n      lr: 0.001\n      eps: 0.001";
  ExpectDistributedMatchesOneProcess(params);
}

}  // namespace
}  // namespace autodist::launcher
