// Which gradients the parameter-server part takes on the replicas' devices, to push them
// compressed from there (ParameterServerPart::TakesOnDevice): a dense variable whole on one
// server, pushed with a compressor the device kind encodes, by each replica on its own; and none
// for replicas on the CPU. CUDA's encoders are stood in for by host-backed ones
// (tests/compress/host_backed_push_stream.h), registered for the Horovod pair only.
#include "runtime/sync/ps_part.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/compress/host_backed_push_stream.h"

namespace autodist::sync {
namespace {

using compress::CompressorKind;

ShardPlan PsShard(const std::string& variable, CompressorKind compressor,
                  bool local_replication = false) {
  ShardPlan shard;
  shard.name = variable;
  shard.variable = variable;
  shard.shape = {4};
  shard.kind = SyncKind::kParameterServer;
  shard.ps_node = "ps0";
  shard.push_compressor = compressor;
  shard.local_replication = local_replication;
  return shard;
}

VariablePlan Variable(const std::string& name, std::vector<ShardPlan> shards, bool sparse = false) {
  VariablePlan variable;
  variable.name = name;
  variable.shape = {4};
  variable.sparse = sparse;
  variable.partitioned = shards.size() > 1;
  variable.shards = std::move(shards);
  return variable;
}

StrategyPlan Plan() {
  StrategyPlan plan;
  plan.ps_nodes = {"ps0"};
  plan.variables.push_back(Variable("ef", {PsShard("ef", CompressorKind::kHorovodEF)}));
  plan.variables.push_back(Variable("plain", {PsShard("plain", CompressorKind::kHorovod)}));
  plan.variables.push_back(Variable("none", {PsShard("none", CompressorKind::kNone)}));
  // TopK has no (stand-in) encoder on the device here.
  plan.variables.push_back(Variable("topk", {PsShard("topk", CompressorKind::kTopKEF)}));
  plan.variables.push_back(
      Variable("rows", {PsShard("rows", CompressorKind::kHorovodEF)}, /*sparse=*/true));
  ShardPlan first = PsShard("parts", CompressorKind::kHorovodEF);
  first.name = "parts/part_0:0";
  ShardPlan second = PsShard("parts", CompressorKind::kHorovodEF);
  second.name = "parts/part_1:0";
  plan.variables.push_back(Variable("parts", {first, second}));
  plan.variables.push_back(Variable(
      "proxy", {PsShard("proxy", CompressorKind::kHorovodEF, /*local_replication=*/true)}));
  ShardPlan reduced = PsShard("reduced", CompressorKind::kHorovodEF);
  reduced.kind = SyncKind::kAllReduce;
  plan.variables.push_back(Variable("reduced", {reduced}));
  for (size_t i = 0; i < plan.variables.size(); ++i) plan.index[plan.variables[i].name] = i;
  return plan;
}

std::set<std::string> TakenOnDevice(const StrategyPlan& plan, tensor::DeviceKind replicas,
                                    int local_replicas) {
  ParameterServerPartOptions options;
  options.placement.local_replicas = local_replicas;
  options.placement.total_replicas = local_replicas;
  options.endpoints = {{"ps0", "127.0.0.1:1"}};  // never called: channels connect on first use
  options.reply_staging = replicas;
  const ParameterServerPart part(plan, options);
  std::set<std::string> taken;
  for (const VariablePlan& variable : plan.variables) {
    if (part.TakesOnDevice(variable.name)) taken.insert(variable.name);
  }
  return taken;
}

class ParameterServerPartTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    compress::testing::RegisterHostBackedPushEncoders(
        {CompressorKind::kHorovod, CompressorKind::kHorovodEF});
  }
};

TEST_F(ParameterServerPartTest, GpuReplicasPushWhatTheDeviceCanEncodeFromTheDevice) {
  const StrategyPlan plan = Plan();
  EXPECT_EQ(TakenOnDevice(plan, tensor::DeviceKind::kCuda, 1),
            (std::set<std::string>{"ef", "plain", "proxy"}));
}

TEST_F(ParameterServerPartTest, AProxySumOfSeveralReplicasIsMadeOnTheHost) {
  // Each replica still pushes its own stream of "ef" and "plain"; "proxy" sums two GPUs first.
  const StrategyPlan plan = Plan();
  EXPECT_EQ(TakenOnDevice(plan, tensor::DeviceKind::kCuda, 2),
            (std::set<std::string>{"ef", "plain"}));
}

TEST_F(ParameterServerPartTest, CpuReplicasTakeNothingOnADevice) {
  EXPECT_TRUE(TakenOnDevice(Plan(), tensor::DeviceKind::kCpu, 1).empty());
}

}  // namespace
}  // namespace autodist::sync
