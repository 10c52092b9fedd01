// What consumers take from a JobSpec (replica counts, compile request, replicas, state
// reductions, the local model) and the parse-time builder check.
#include "runtime/job/job_views.h"

#include <gtest/gtest.h>

#include "runtime/job/builder_check.h"
#include "runtime/job/job_parser.h"
#include "runtime/optim/optimizer_options.h"
#include "tests/job/job_test_support.h"

namespace autodist::job {
namespace {

using testing::ErrorOf;
using testing::kJobFixtures;

graph::Variable Float(const std::string& name, std::vector<int64_t> shape) {
  graph::Variable variable;
  variable.name = name;
  variable.bytes = graph::NumElements(shape) * 4;
  variable.shape = std::move(shape);
  variable.gradient_name = name + "_grad";
  return variable;
}

TEST(JobViewsTest, ReplicaCountsAndTotalReplicas) {
  const JobSpec full = LoadJobFile(kJobFixtures + "/full.yaml");
  const strategy::ReplicaCounts counts = ToReplicaCounts(full);
  EXPECT_EQ(counts.workers, 3);
  EXPECT_EQ(counts.gpus_per_worker, 0);
  EXPECT_EQ(counts.replicas_per_worker, 2);
  EXPECT_EQ(counts.parameter_servers, 2);
  EXPECT_EQ(TotalReplicas(full), 6);  // 3 CPU workers x 2 replicas

  const JobSpec gpus = LoadJobFile(kJobFixtures + "/cluster.json");
  EXPECT_EQ(TotalReplicas(gpus), 8);  // 2 workers x 4 GPUs

  // The counts build the resource spec the compiler takes: 6 CPU replicas on worker nodes and
  // 2 dedicated parameter-server nodes.
  const strategy::ResourceSpec resources = strategy::ResourceSpec::FromReplicaCounts(counts);
  EXPECT_EQ(resources.Replicas().size(), 6U);
  EXPECT_EQ(resources.PsCandidates(), (std::vector<std::string>{"ps-0:CPU:0", "ps-1:CPU:0"}));
}

TEST(JobViewsTest, CompileRequestTellsTheCostModelWhatTheOptimizerDoesToAbsentRows) {
  JobSpec job = LoadJobFile(kJobFixtures + "/full.yaml");
  job.training.optimizer = optim::ParseOptimizerOptions("sgd", {{"lr", "0.1"}});
  EXPECT_TRUE(
      ToCompileRequest(job, std::nullopt).optimizer.sparse_updates_change_only_present_rows);
  job.training.optimizer =
      optim::ParseOptimizerOptions("sgd", {{"lr", "0.1"}, {"momentum", "0.9"}});
  EXPECT_FALSE(
      ToCompileRequest(job, std::nullopt).optimizer.sparse_updates_change_only_present_rows);
  job.training.optimizer = optim::ParseOptimizerOptions("adam", {{"lazy_sparse", "true"}});
  EXPECT_TRUE(
      ToCompileRequest(job, std::nullopt).optimizer.sparse_updates_change_only_present_rows);
}

TEST(JobViewsTest, CompileRequestCompiles) {
  const JobSpec full = LoadJobFile(kJobFixtures + "/full.yaml");
  const strategy::CompileRequest request = ToCompileRequest(full, std::nullopt);
  EXPECT_EQ(request.builder, "PartitionedPS");
  EXPECT_EQ(request.options, full.strategy.options);
  EXPECT_EQ(request.colocation, full.strategy.colocation);

  const std::vector<graph::Variable> variables = {
      Float("fc1.weight", {256, 784}), Float("fc1.bias", {256}), Float("fc2.weight", {10, 256})};
  const strategy::CompileResult result = strategy::Compile(
      variables, strategy::ResourceSpec::FromReplicaCounts(ToReplicaCounts(full)), request);
  EXPECT_EQ(result.builder, "PartitionedPS");
  ASSERT_EQ(result.strategy.node_config_size(), 3);
  EXPECT_EQ(result.strategy.graph_config().replicas_size(), 6);
  // Options from the manifest reach every synchronizer: staleness 2, local proxies on.
  const auto& first = result.strategy.node_config(0);
  const auto& synchronizer =
      first.part_config_size() > 0 ? first.part_config(0).pssynchronizer() : first.pssynchronizer();
  EXPECT_EQ(synchronizer.staleness(), 2);
  EXPECT_TRUE(synchronizer.local_replication());
}

TEST(JobViewsTest, SumReducedStates) {
  const JobSpec full = LoadJobFile(kJobFixtures + "/full.yaml");
  EXPECT_EQ(SumReducedStates(full), (std::set<std::string>{"bn1.running_var"}));
  EXPECT_TRUE(SumReducedStates(LoadJobFile(kJobFixtures + "/minimal.yaml")).empty());
}

TEST(JobViewsTest, RequireLocalModel) {
  const JobSpec full = LoadJobFile(kJobFixtures + "/full.yaml");
  EXPECT_EQ(RequireLocalModel(full), full.manifest_dir + "/models/mlp.onnx");
  const JobSpec cluster = LoadJobFile(kJobFixtures + "/cluster.json");
  EXPECT_EQ(ErrorOf([&] { RequireLocalModel(cluster); }),
            "job 'fmnist-cluster': spec.model.configMap (fmnist-model/model.onnx) can only be "
            "mounted by the operator in a cluster; to run on this machine, set spec.model.path to "
            "the ONNX file");
}

TEST(BuilderCheckTest, KnowsEveryBuilderOfTheCompiler) {
  // A builder added to the compiler but not to the parse-time check would make valid manifests
  // fail; this catches it.
  for (const std::string& name : strategy::BuilderNames()) {
    SCOPED_TRACE(name);
    const BuilderPlacement placement = CheckBuilderOptions(name, {});
    if (name == "Auto") {
      EXPECT_EQ(placement, BuilderPlacement::kChosenByAuto);
    } else if (name == "AllReduce" || name == "PartitionedAR" || name == "RandomAxisPartitionAR") {
      EXPECT_EQ(placement, BuilderPlacement::kAllReduce);
    } else {
      EXPECT_EQ(placement, BuilderPlacement::kParameterServers);
    }
  }
}

TEST(BuilderCheckTest, AcceptsWhatTheBuildersRead) {
  EXPECT_EQ(CheckBuilderOptions("RandomAxisPartitionAR", {{"chunkSize", "8"}, {"seed", "3"}}),
            BuilderPlacement::kAllReduce);
  EXPECT_EQ(CheckBuilderOptions("Parallax", {{"chunk_size", "8"}, {"sync", "false"}}),
            BuilderPlacement::kParameterServers);
  EXPECT_EQ(ErrorOf([] {
              CheckBuilderOptions("PartitionedAR", {{"compressor", "X"}});
            }),
            "builder PartitionedAR does not take option 'compressor'; it takes: chunk_size");
  EXPECT_EQ(ErrorOf([] { CheckBuilderOptions("Horovod", {}); }),
            "unknown strategy builder 'Horovod'; valid: PS, PSLoadBalancing, PartitionedPS, "
            "UnevenPartitionedPS, AllReduce, PartitionedAR, RandomAxisPartitionAR, Parallax, "
            "Auto");
}

}  // namespace
}  // namespace autodist::job
