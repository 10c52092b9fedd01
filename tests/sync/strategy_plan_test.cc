#include "runtime/sync/strategy_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/common/error.h"
#include "runtime/strategy/compiler.h"
#include "runtime/strategy/sharding.h"
#include "runtime/sync/replicator.h"
#include "tests/strategy/test_support.h"

namespace autodist::sync {
namespace {

using strategy::testing::FloatVariable;

using ::testing::HasSubstr;

std::vector<graph::Variable> Model() {
  return {FloatVariable("embedding", {10, 4}, true), FloatVariable("fc.weight", {3, 4}),
          FloatVariable("fc.bias", {3})};
}

strategy::ResourceSpec TwoWorkersOnePs() {
  return strategy::ResourceSpec::FromReplicaCounts({2, 0, 1, 1, std::nullopt});
}

autodist::proto::Strategy Compile(const std::string& builder,
                                  const strategy::ResourceSpec& resources,
                                  strategy::BuilderOptions options = {}) {
  strategy::CompileRequest request;
  request.builder = builder;
  request.options = std::move(options);
  return strategy::Compile(Model(), resources, request).strategy;
}

TEST(StrategyPlanTest, PsPlacesEveryWholeVariableOnTheParameterServer) {
  const auto resources = TwoWorkersOnePs();
  const StrategyPlan plan = PlanStrategy(Compile("PS", resources), Model(), resources);
  ASSERT_EQ(plan.variables.size(), 3u);
  EXPECT_EQ(plan.ps_nodes, std::vector<std::string>{"ps-0"});
  for (const VariablePlan& variable : plan.variables) {
    ASSERT_EQ(variable.shards.size(), 1u) << variable.name;
    EXPECT_FALSE(variable.partitioned);
    EXPECT_EQ(variable.shards[0].name, variable.name);
    EXPECT_EQ(variable.shards[0].shape, variable.shape);
    EXPECT_EQ(variable.shards[0].ps_node, "ps-0");
    EXPECT_TRUE(variable.shards[0].sync);
  }
  EXPECT_TRUE(plan.Variable("embedding").sparse);
  EXPECT_EQ(plan.HostedBy("ps-0").size(), 3u);
  EXPECT_TRUE(plan.HostedBy("worker-0").empty());
}

TEST(StrategyPlanTest, PartitionedPsCutsAlongAxisZeroWithContiguousRanges) {
  const auto resources = strategy::ResourceSpec::FromReplicaCounts({2, 0, 1, 2, std::nullopt});
  const StrategyPlan plan = PlanStrategy(Compile("PartitionedPS", resources), Model(), resources);
  const VariablePlan& embedding = plan.Variable("embedding");
  ASSERT_TRUE(embedding.partitioned);
  int64_t covered = 0;
  for (size_t i = 0; i < embedding.shards.size(); ++i) {
    const ShardPlan& shard = embedding.shards[i];
    EXPECT_EQ(shard.name, strategy::PartName("embedding", static_cast<int64_t>(i)));
    EXPECT_EQ(shard.range.axis, 0);
    EXPECT_EQ(shard.range.offset, covered);
    EXPECT_EQ(shard.shape, (tensor::Shape{shard.range.extent, 4}));
    covered += shard.range.extent;
  }
  EXPECT_EQ(covered, 10);
  EXPECT_EQ(plan.ps_nodes, (std::vector<std::string>{"ps-0", "ps-1"}));
}

TEST(StrategyPlanTest, OptionsReachEveryShard) {
  const auto resources = TwoWorkersOnePs();
  const StrategyPlan plan = PlanStrategy(
      Compile("PSLoadBalancing", resources,
              {{"sync", "true"}, {"staleness", "2"}, {"local_proxy_variable", "true"}}),
      Model(), resources);
  for (const VariablePlan& variable : plan.variables) {
    EXPECT_EQ(variable.shards[0].staleness, 2) << variable.name;
    EXPECT_TRUE(variable.shards[0].local_replication) << variable.name;
  }
}

TEST(StrategyPlanTest, WorkersHostTheParameterServersWithoutDedicatedOnes) {
  const auto resources = strategy::ResourceSpec::FromReplicaCounts({2, 0, 1, 0, std::nullopt});
  const StrategyPlan plan = PlanStrategy(Compile("PSLoadBalancing", resources), Model(), resources);
  for (const std::string& node : plan.ps_nodes) EXPECT_THAT(node, HasSubstr("worker-"));
}

TEST(StrategyPlanTest, AllReduceGroupsCarryAlgorithmAndCompressor) {
  const auto resources = TwoWorkersOnePs();
  const StrategyPlan plan = PlanStrategy(
      Compile("AllReduce", strategy::ResourceSpec::FromReplicaCounts({2, 0, 1, 0, std::nullopt}),
              {{"chunk_size", "2"},
               {"all_reduce_spec", "RING"},
               {"compressor", "PowerSGDCompressor"},
               {"powersgd_rank", "2"}}),
      Model(), strategy::ResourceSpec::FromReplicaCounts({2, 0, 1, 0, std::nullopt}));
  EXPECT_FALSE(plan.has_parameter_servers());
  EXPECT_EQ(plan.groups, (std::vector<int>{0, 1}));
  const std::vector<const ShardPlan*> first = plan.GroupMembers(0);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0]->name, "embedding");
  EXPECT_EQ(first[1]->name, "fc.weight");
  EXPECT_EQ(first[0]->kind, SyncKind::kAllReduce);
  EXPECT_EQ(first[0]->algorithm, collective::AllReduceAlgorithm::kRing);
  EXPECT_EQ(first[0]->compressor.kind, compress::CompressorKind::kPowerSGD);
  EXPECT_EQ(first[0]->compressor.rank, 2);
  EXPECT_EQ(plan.GroupMembers(1).front()->name, "fc.bias");
}

TEST(StrategyPlanTest, ParallaxMixesAllReduceAndParameterServers) {
  const auto resources = TwoWorkersOnePs();
  const StrategyPlan plan = PlanStrategy(Compile("Parallax", resources), Model(), resources);
  EXPECT_EQ(plan.Variable("embedding").shards[0].kind, SyncKind::kParameterServer);
  EXPECT_EQ(plan.Variable("fc.weight").shards[0].kind, SyncKind::kAllReduce);
  // AutoDist's default spec is NCCL, which runs as AUTO (the CPU's fastest) without GPUs.
  EXPECT_TRUE(plan.Variable("fc.weight").shards[0].nccl_requested);
  EXPECT_EQ(plan.Variable("fc.weight").shards[0].algorithm, collective::AllReduceAlgorithm::kAuto);
  EXPECT_EQ(plan.ps_nodes, std::vector<std::string>{"ps-0"});
  EXPECT_EQ(plan.HostedBy("ps-0").size(), 1u);
  EXPECT_EQ(&plan.Shard("fc.bias"), &plan.Variable("fc.bias").shards[0]);
}

TEST(StrategyPlanTest, StrategyForAnotherModelIsRejected) {
  const auto resources = TwoWorkersOnePs();
  const auto strategy = Compile("PS", resources);
  std::vector<graph::Variable> other = Model();
  other.push_back(FloatVariable("extra", {2}));
  EXPECT_THAT([&] { PlanStrategy(strategy, other, resources); },
              ::testing::ThrowsMessage<Error>(HasSubstr("'extra' has no node_config")));
  other = {FloatVariable("fc.weight", {3, 4}), FloatVariable("fc.bias", {3})};
  EXPECT_THAT([&] { PlanStrategy(strategy, other, resources); },
              ::testing::ThrowsMessage<Error>(HasSubstr("'embedding', which is not")));
}

TEST(StrategyPlanTest, BadDevicesAndPartsAreRejected) {
  const auto resources = TwoWorkersOnePs();
  auto strategy = Compile("PS", resources);
  strategy.mutable_node_config(0)->mutable_pssynchronizer()->set_reduction_destination(
      "elsewhere:CPU:0");
  EXPECT_THAT([&] { PlanStrategy(strategy, Model(), resources); },
              ::testing::ThrowsMessage<Error>(HasSubstr("not a device of any node")));
  strategy.mutable_node_config(0)->mutable_pssynchronizer()->set_reduction_destination("ps-0");
  EXPECT_THAT([&] { PlanStrategy(strategy, Model(), resources); },
              ::testing::ThrowsMessage<Error>(HasSubstr("expected a device")));

  const auto partitioned_resources =
      strategy::ResourceSpec::FromReplicaCounts({2, 0, 1, 2, std::nullopt});
  auto partitioned = Compile("PartitionedPS", partitioned_resources);
  for (auto& node : *partitioned.mutable_node_config()) {
    if (node.var_name() == "embedding") node.mutable_part_config()->RemoveLast();
  }
  EXPECT_THAT([&] { PlanStrategy(partitioned, Model(), partitioned_resources); },
              ::testing::ThrowsMessage<Error>(HasSubstr("part_config entries")));
}

TEST(StrategyPlanTest, AGroupsMembersMustShareAlgorithmAndCompressor) {
  const auto resources = TwoWorkersOnePs();
  autodist::proto::Strategy strategy = Compile("AllReduce", resources);
  // The default chunk puts every variable in group 0; give one member another compressor.
  const StrategyPlan uniform = PlanStrategy(strategy, Model(), resources);
  ASSERT_EQ(uniform.groups, std::vector<int>{0});
  EXPECT_EQ(uniform.UniformGroupMembers(0).size(), 3u);
  for (auto& node : *strategy.mutable_node_config()) {
    if (node.var_name() == "fc.bias") {
      node.mutable_allreducesynchronizer()->set_compressor(
          autodist::proto::AllReduceSynchronizer::HorovodCompressor);
    }
  }
  const StrategyPlan mixed = PlanStrategy(strategy, Model(), resources);
  try {
    mixed.UniformGroupMembers(0);
    ADD_FAILURE() << "a group with two compressors was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("and 'fc.bias' share all-reduce group 0 but not its "
                                        "algorithm and compressor settings"));
  }
}

TEST(StrategyPlanTest, NodeOfDeviceReadsAddresses) {
  EXPECT_EQ(NodeOfDevice("worker-0:CPU:0", "t"), "worker-0");
  EXPECT_EQ(NodeOfDevice("10.0.0.1:GPU:3", "t"), "10.0.0.1");
  EXPECT_THROW(NodeOfDevice(":CPU:0", "t"), Error);
  EXPECT_THROW(NodeOfDevice("a:TPU:0", "t"), Error);
  EXPECT_THROW(NodeOfDevice("a:CPU:", "t"), Error);
  EXPECT_THROW(NodeOfDevice("a:CPU:x", "t"), Error);
}

TEST(ReplicatorTest, EachNodeRunsItsConsecutiveReplicas) {
  const auto resources = strategy::ResourceSpec::FromReplicaCounts({2, 0, 3, 1, std::nullopt});
  const auto strategy = Compile("PS", resources);
  const ReplicaPlacement first = PlaceReplicas(strategy, "worker-0");
  const ReplicaPlacement second = PlaceReplicas(strategy, "worker-1");
  const ReplicaPlacement ps = PlaceReplicas(strategy, "ps-0");
  EXPECT_EQ(first.total_replicas, 6);
  EXPECT_EQ(first.first_replica, 0);
  EXPECT_EQ(first.local_replicas, 3);
  EXPECT_EQ(second.first_replica, 3);
  EXPECT_EQ(second.local_replicas, 3);
  EXPECT_EQ(second.devices.front(), "worker-1:CPU:0");
  EXPECT_EQ(ps.local_replicas, 0);
}

TEST(ReplicatorTest, InterleavedReplicasAreRejected) {
  autodist::proto::Strategy strategy;
  for (const char* device : {"a:CPU:0", "b:CPU:0", "a:CPU:1"}) {
    strategy.mutable_graph_config()->add_replicas(device);
  }
  EXPECT_THAT([&] { PlaceReplicas(strategy, "a"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("not consecutive")));
  EXPECT_THROW(PlaceReplicas(autodist::proto::Strategy{}, "a"), Error);
}

}  // namespace
}  // namespace autodist::sync
