// Which collectives a worker's all-reduce runs on: Gloo for CPU workers and for what NCCL cannot
// serve (each with the line that says why), NCCL for GPU workers whose replicas each have a GPU
// of their own; and the CPU path connected for real.
#include "runtime/cli/worker_collectives.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "runtime/collective/memory_rendezvous_store.h"
#include "runtime/common/error.h"
#include "runtime/compress/flat_compressor.h"
#include "runtime/strategy/compiler.h"
#include "tests/strategy/test_support.h"

namespace autodist::cli {
namespace {

using strategy::testing::FloatVariable;

using ::testing::HasSubstr;
using ::testing::StartsWith;

sync::StrategyPlan Plan(const std::string& builder, strategy::BuilderOptions options = {}) {
  const std::vector<graph::Variable> variables{FloatVariable("fc.weight", {3, 4}),
                                               FloatVariable("fc.bias", {3})};
  const auto resources = strategy::ResourceSpec::FromReplicaCounts({2, 1, 1, 1, std::nullopt});
  strategy::CompileRequest request;
  request.builder = builder;
  request.options = std::move(options);
  return sync::PlanStrategy(strategy::Compile(variables, resources, request).strategy, variables,
                            resources);
}

const std::vector<tensor::Device> kGpu{tensor::Device::Cuda(0)};
const std::vector<tensor::Device> kCpu{tensor::Device::Cpu()};

// A gather of the ranks' GPUs that must not happen: it fails the test, naming why not.
std::function<std::vector<std::string>()> NeverGathered(const std::string& why) {
  return [why] {
    ADD_FAILURE() << "gathered the ranks' GPUs, though " << why;
    return std::vector<std::string>{};
  };
}

TEST(SharedDeviceTest, NamesTheFirstTwoRanksOnOneGpu) {
  EXPECT_EQ(SharedDevice({"a/0000:01:00.0", "a/0000:02:00.0", "b/0000:01:00.0"}), std::nullopt);
  EXPECT_EQ(SharedDevice({"a/0000:01:00.0", "a/0000:02:00.0", "a/0000:01:00.0"}),
            "replicas 0 and 2 share GPU 0000:01:00.0 on a");
}

TEST(ChooseCollectivesTest, GpuWorkersWithAGpuEachUseNccl) {
  int gathered = 0;
  const CollectivesChoice choice = ChooseCollectives(Plan("AllReduce"), kGpu, true, [&] {
    ++gathered;
    return std::vector<std::string>{"a/0000:01:00.0", "a/0000:02:00.0"};
  });
  EXPECT_TRUE(choice.nccl);
  EXPECT_EQ(gathered, 1);
  EXPECT_THAT(choice.note, HasSubstr("NCCL between the job's GPUs"));
}

TEST(ChooseCollectivesTest, SharedGpusFallBackToGlooSayingWhich) {
  const CollectivesChoice choice = ChooseCollectives(Plan("AllReduce"), kGpu, true, [] {
    return std::vector<std::string>{"a/0000:01:00.0", "a/0000:01:00.0"};
  });
  EXPECT_FALSE(choice.nccl);
  // The default spec is NCCL, so falling back is a warning.
  EXPECT_THAT(choice.note, StartsWith("warning: all-reduce spec NCCL: "));
  EXPECT_THAT(choice.note, HasSubstr("replicas 0 and 1 share GPU 0000:01:00.0 on a"));
}

TEST(ChooseCollectivesTest, WhatNcclCannotServeStaysOnTheHostWithoutAskingTheGpus) {
  const auto never = NeverGathered("NCCL was out of the question");
  const CollectivesChoice ps = ChooseCollectives(Plan("PS"), kGpu, true, never);
  EXPECT_FALSE(ps.nccl);
  EXPECT_THAT(ps.note, HasSubstr("is on parameter server"));
  // RING asks for Gloo's ring in host memory, not for NCCL: a plain line, not a warning.
  const CollectivesChoice ring =
      ChooseCollectives(Plan("AllReduce", {{"all_reduce_spec", "RING"}}), kGpu, true, never);
  EXPECT_FALSE(ring.nccl);
  EXPECT_THAT(ring.note,
              StartsWith("all-reduce: GPU workers reduce through host memory with Gloo: "));
  EXPECT_THAT(ring.note, HasSubstr("asks for all-reduce spec RING"));
  // Every compressor has its flat form on CUDA (this binary links the CUDA backend where the
  // build has one), so a compressed plan is no reason to stay on the host there.
  const CollectivesChoice compressed = ChooseCollectives(
      Plan("AllReduce", {{"compressor", "PowerSGDCompressor"}, {"all_reduce_spec", "AUTO"}}), kGpu,
      true, [] {
        return std::vector<std::string>{"a/0000:01:00.0", "a/0000:02:00.0"};
      });
  EXPECT_EQ(compressed.nccl, compress::HasFlatCompressor(compress::CompressorKind::kPowerSGD,
                                                         tensor::DeviceKind::kCuda))
      << compressed.note;
  const CollectivesChoice unbuilt = ChooseCollectives(Plan("AllReduce"), kGpu, false, never);
  EXPECT_FALSE(unbuilt.nccl);
  EXPECT_THAT(unbuilt.note, HasSubstr("this build has no NCCL"));
}

// The test hook (kReplicaRanksOnCpuEnv): CPU workers take the GPU workers' path with a Gloo rank
// per replica, asking nothing of the GPUs; a plan that path cannot take is an error naming it.
TEST(ChooseCollectivesTest, TheReplicaRanksHookPutsCpuWorkersOnTheGpuPathWithGloo) {
  const auto never = NeverGathered("the replicas are on the CPU");
  const CollectivesChoice choice = ChooseCollectives(Plan("AllReduce"), kCpu, true, never, true);
  EXPECT_FALSE(choice.nccl);
  EXPECT_TRUE(choice.gloo_replica_ranks);
  EXPECT_THAT(choice.note, HasSubstr("one Gloo rank per replica on the CPU"));
  EXPECT_FALSE(ChooseCollectives(Plan("AllReduce"), kCpu, true, never).gloo_replica_ranks);
  try {
    ChooseCollectives(Plan("AllReduce", {{"all_reduce_spec", "RING"}}), kCpu, true, never, true);
    ADD_FAILURE() << "a RING plan took the replicas' path";
  } catch (const autodist::Error& error) {
    EXPECT_EQ(error.code(), autodist::ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("AUTODIST_REPLICA_RANKS_ON_CPU asks for the all-reduce"));
  }
}

TEST(ChooseCollectivesTest, CpuWorkersUseGlooAndWarnOnlyWhenNcclWasAskedFor) {
  const auto never = NeverGathered("a CPU run");
  const CollectivesChoice nccl = ChooseCollectives(Plan("AllReduce"), kCpu, true, never);
  EXPECT_FALSE(nccl.nccl);
  EXPECT_THAT(nccl.note, HasSubstr("all-reduce spec NCCL needs GPUs"));
  const CollectivesChoice autospec =
      ChooseCollectives(Plan("AllReduce", {{"all_reduce_spec", "AUTO"}}), kCpu, true, never);
  EXPECT_FALSE(autospec.nccl);
  EXPECT_EQ(autospec.note, "");
}

TEST(ConnectWorkerCollectivesTest, CpuWorkersGetOneGlooCommunicatorThatReduces) {
  const sync::StrategyPlan plan = Plan("AllReduce", {{"all_reduce_spec", "AUTO"}});
  auto store = std::make_shared<collective::MemoryRendezvousStore>();
  std::vector<std::future<float>> workers;
  for (int rank = 0; rank < 2; ++rank) {
    workers.push_back(std::async(std::launch::async, [&, rank] {
      CollectivesSetup setup;
      setup.base.rank = rank;
      setup.base.size = 2;
      setup.base.rendezvous = store;
      setup.base.prefix = "allreduce";
      setup.placement = sync::ReplicaPlacement{rank, 1, 2, {}};
      setup.devices = kCpu;
      std::vector<std::string> printed;
      const WorkerCollectives collectives = ConnectWorkerCollectives(
          plan, setup, [&](const std::string& line) { printed.push_back(line); });
      EXPECT_TRUE(printed.empty());
      EXPECT_TRUE(collectives.replicas.empty());
      if (!collectives.workers) return -1.0F;
      float value = static_cast<float>(rank + 1);
      collectives.workers->AllReduceSum(&value, 1, collective::ElementType::kFloat32,
                                        collective::AllReduceAlgorithm::kAuto, "test");
      return value;
    }));
  }
  for (auto& worker : workers) EXPECT_EQ(worker.get(), 3.0F);
}

}  // namespace
}  // namespace autodist::cli
