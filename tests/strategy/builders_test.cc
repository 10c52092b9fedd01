// Each builder on hand-built variable sets, with expectations worked out by hand from AutoDist's
// builder semantics (comments show the arithmetic).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "runtime/common/error.h"
#include "runtime/strategy/compiler.h"
#include "tests/strategy/test_support.h"

namespace autodist::strategy {
namespace {

using autodist::proto::AllReduceSynchronizer;
using autodist::proto::Strategy;
using testing::CpuNodes;
using testing::FloatVariable;
using testing::GpuNodes;

Strategy Build(const std::vector<graph::Variable>& variables, const ResourceSpec& resources,
               const std::string& builder, BuilderOptions options = {},
               ColocationGroups colocation = {}) {
  CompileRequest request;
  request.builder = builder;
  request.options = std::move(options);
  request.colocation = std::move(colocation);
  return Compile(variables, resources, request).strategy;
}

std::vector<std::string> Destinations(const Strategy& strategy) {
  std::vector<std::string> out;
  for (const auto& node : strategy.node_config()) {
    out.push_back(node.pssynchronizer().reduction_destination());
  }
  return out;
}

std::vector<std::string> PartDestinations(const Strategy::Node& node) {
  std::vector<std::string> out;
  for (const auto& part : node.part_config()) {
    out.push_back(part.pssynchronizer().reduction_destination());
  }
  return out;
}

// Expects the error message of `body` to contain `fragment`.
template <typename Body>
void ExpectError(Body body, const std::string& fragment) {
  try {
    body();
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos)
        << "message: " << error.what();
  }
}

const std::string kA = "10.0.0.1:CPU:0";
const std::string kB = "10.0.0.2:CPU:0";
const std::string kC = "10.0.0.3:CPU:0";

std::vector<graph::Variable> FiveDense() {
  // bytes: 400, 100, 100, 300, 50
  return {FloatVariable("v0", {100}), FloatVariable("v1", {25}), FloatVariable("v2", {5, 5}),
          FloatVariable("v3", {75}), FloatVariable("v4", {12, 1})};
}

TEST(PsBuilderTest, EveryVariableOnTheFirstCpuWithOptions) {
  const Strategy strategy =
      Build(FiveDense(), CpuNodes(3), "PS", {{"local_proxy_variable", "true"}, {"staleness", "2"}});
  ASSERT_EQ(strategy.node_config_size(), 5);
  for (const auto& node : strategy.node_config()) {
    ASSERT_TRUE(node.has_pssynchronizer());
    EXPECT_EQ(node.pssynchronizer().reduction_destination(), kA);
    EXPECT_TRUE(node.pssynchronizer().local_replication());
    EXPECT_TRUE(node.pssynchronizer().sync());
    EXPECT_EQ(node.pssynchronizer().staleness(), 2);
    EXPECT_TRUE(node.partitioner().empty());
  }
  EXPECT_EQ(strategy.node_config(3).var_name(), "v3");
  // CPU-only nodes: each node's CPU:0 is a replica.
  EXPECT_EQ(strategy.graph_config().replicas().size(), 3);
  EXPECT_EQ(strategy.graph_config().replicas(2), kC);
}

TEST(PsBuilderTest, PushCompressionIsPerSynchronizer) {
  const Strategy strategy = Build(FiveDense(), CpuNodes(2), "PSLoadBalancing",
                                  {{"compressor", "TopKCompressorEF"}, {"topkFraction", "0.1"}});
  for (const auto& node : strategy.node_config()) {
    EXPECT_EQ(node.pssynchronizer().compressor(), AllReduceSynchronizer::TopKCompressorEF);
    EXPECT_FLOAT_EQ(node.pssynchronizer().topk_fraction(), 0.1F);
  }
  ExpectError(
      [&] {
        Build(FiveDense(), CpuNodes(2), "PS", {{"compressor", "PowerSGDCompressor"}});
      },
      "compressor=PowerSGDCompressor needs an all-reduce");
}

TEST(PsBuilderTest, DefaultsAreAutoDists) {
  const Strategy strategy = Build(FiveDense(), CpuNodes(1), "PS");
  const auto& ps = strategy.node_config(0).pssynchronizer();
  EXPECT_FALSE(ps.local_replication());
  EXPECT_TRUE(ps.sync());
  EXPECT_EQ(ps.staleness(), 0);
}

TEST(PsLoadBalancingTest, GreedyByBytesWithTiesToTheEarliest) {
  // v0 400 -> a (all 0); v1 100 -> b; v2 100 -> c; v3 300 -> b (b=c=100, b first);
  // v4 50 -> c (a=400, b=400, c=100).
  const Strategy strategy = Build(FiveDense(), CpuNodes(3), "PSLoadBalancing");
  EXPECT_EQ(Destinations(strategy), (std::vector<std::string>{kA, kB, kC, kB, kC}));
}

TEST(PsLoadBalancingTest, SingleServerTakesEverything) {
  const Strategy strategy = Build(FiveDense(), CpuNodes(1), "PSLoadBalancing");
  EXPECT_EQ(Destinations(strategy), std::vector<std::string>(5, kA));
}

TEST(PsLoadBalancingTest, ColocatedVariablesShareAServerAndCountTogether) {
  // Group {v1, v3} (100 + 300 bytes) is placed when v1 is reached.
  // v0 400 -> a; v1 -> b (b=0), b += 400; v2 100 -> c; v3 -> b (group); v4 50 -> c (c=100).
  const Strategy strategy = Build(FiveDense(), CpuNodes(3), "PSLoadBalancing", {}, {{"v1", "v3"}});
  EXPECT_EQ(Destinations(strategy), (std::vector<std::string>{kA, kB, kC, kB, kC}));

  // Group {v0, v4}: v0 -> a with 450; v1 -> b; v2 -> c; v3 300 -> b (b=c=100); v4 -> a.
  const Strategy second = Build(FiveDense(), CpuNodes(3), "PSLoadBalancing", {}, {{"v0", "v4"}});
  EXPECT_EQ(Destinations(second), (std::vector<std::string>{kA, kB, kC, kB, kA}));
}

TEST(PartitionedPsTest, ShardsAlongAxisZeroOverLeastLoadedServers) {
  const std::vector<graph::Variable> variables = {
      FloatVariable("w", {6, 4}),  // 96 B, 2 shards -> a, b (48 each)
      FloatVariable("p", {7}),     // 28 B, prime: 7 shards of 4 B
      FloatVariable("s", {}),      // scalar: 1 shard
      FloatVariable("cf", {4, 4}, false, /*partitionable=*/false),  // control flow: 1 shard
      FloatVariable("r", {1, 5}),                                   // dim0 1: 1 shard
  };
  const Strategy strategy = Build(variables, CpuNodes(3), "PartitionedPS");
  ASSERT_EQ(strategy.node_config_size(), 5);

  const auto& w = strategy.node_config(0);
  EXPECT_EQ(w.var_name(), "w");
  EXPECT_FALSE(w.has_pssynchronizer());
  EXPECT_EQ(w.partitioner(), "2,1");
  ASSERT_EQ(w.part_config_size(), 2);
  EXPECT_EQ(w.part_config(0).var_name(), "w/part_0:0");
  EXPECT_EQ(w.part_config(1).var_name(), "w/part_1:0");
  EXPECT_EQ(PartDestinations(w), (std::vector<std::string>{kA, kB}));

  // Loads a=48 b=48 c=0. Stable order by load: c, a, b; repeated: c a b c a b c.
  const auto& p = strategy.node_config(1);
  EXPECT_EQ(p.partitioner(), "7");
  EXPECT_EQ(PartDestinations(p), (std::vector<std::string>{kC, kA, kB, kC, kA, kB, kC}));

  // Loads a=56 b=56 c=12: the scalar goes to c (c=16), the control-flow variable too (c=80),
  // then r (20 B) goes to a (a=b=56, a first).
  EXPECT_EQ(strategy.node_config(2).pssynchronizer().reduction_destination(), kC);
  EXPECT_TRUE(strategy.node_config(2).partitioner().empty());
  EXPECT_EQ(strategy.node_config(3).pssynchronizer().reduction_destination(), kC);
  EXPECT_EQ(strategy.node_config(3).part_config_size(), 0);
  EXPECT_EQ(strategy.node_config(4).pssynchronizer().reduction_destination(), kA);
}

TEST(PartitionedPsTest, PartsCarryTheOptions) {
  const Strategy strategy = Build({FloatVariable("w", {4, 2})}, CpuNodes(2), "PartitionedPS",
                                  {{"sync", "false"}, {"local_proxy_variable", "true"}});
  for (const auto& part : strategy.node_config(0).part_config()) {
    EXPECT_FALSE(part.pssynchronizer().sync());
    EXPECT_TRUE(part.pssynchronizer().local_replication());
  }
}

TEST(PartitionedPsTest, ColocatedVariablesAreNotPartitioned) {
  const Strategy strategy = Build({FloatVariable("w", {6, 4}), FloatVariable("b", {6})},
                                  CpuNodes(2), "PartitionedPS", {}, {{"w", "b"}});
  for (const auto& node : strategy.node_config()) {
    EXPECT_TRUE(node.partitioner().empty());
    EXPECT_EQ(node.pssynchronizer().reduction_destination(), kA);
  }
}

TEST(UnevenPartitionedPsTest, ShardsAreTheSmallestNonDivisor) {
  const std::vector<graph::Variable> variables = {
      FloatVariable("w", {6, 4}),  // 4 shards (2 and 3 divide 6)
      FloatVariable("t", {2, 3}),  // no non-divisor in [2, 2): 2 shards
      FloatVariable("n", {9}),     // 2 shards
      FloatVariable("o", {1, 3}),  // 1 shard
  };
  const Strategy strategy = Build(variables, CpuNodes(2), "UnevenPartitionedPS");
  EXPECT_EQ(strategy.node_config(0).partitioner(), "4,1");
  EXPECT_EQ(strategy.node_config(0).part_config_size(), 4);
  // 96 B over 4 shards, 24 B each; order a b, repeated: a b a b.
  EXPECT_EQ(PartDestinations(strategy.node_config(0)), (std::vector<std::string>{kA, kB, kA, kB}));
  EXPECT_EQ(strategy.node_config(1).partitioner(), "2,1");
  EXPECT_EQ(strategy.node_config(2).partitioner(), "2");
  EXPECT_TRUE(strategy.node_config(3).partitioner().empty());
  EXPECT_TRUE(strategy.node_config(3).has_pssynchronizer());
}

TEST(AllReduceTest, GroupsAreIndexOverChunkSize) {
  const Strategy strategy = Build(
      FiveDense(), GpuNodes({2}), "AllReduce",
      {{"chunk_size", "2"}, {"all_reduce_spec", "RING"}, {"compressor", "HorovodCompressorEF"}});
  std::vector<int> groups;
  for (const auto& node : strategy.node_config()) {
    ASSERT_TRUE(node.has_allreducesynchronizer());
    EXPECT_EQ(node.allreducesynchronizer().spec(), AllReduceSynchronizer::RING);
    EXPECT_EQ(node.allreducesynchronizer().compressor(),
              AllReduceSynchronizer::HorovodCompressorEF);
    groups.push_back(node.allreducesynchronizer().group());
  }
  EXPECT_EQ(groups, (std::vector<int>{0, 0, 1, 1, 2}));
  EXPECT_EQ(strategy.graph_config().replicas().size(), 2);
  EXPECT_EQ(strategy.graph_config().replicas(1), "10.0.1.1:GPU:1");
}

TEST(AllReduceTest, DefaultsAreNcclNoCompressionOneGroup) {
  const Strategy strategy = Build(FiveDense(), GpuNodes({1}), "AllReduce");
  for (const auto& node : strategy.node_config()) {
    EXPECT_EQ(node.allreducesynchronizer().spec(), AllReduceSynchronizer::NCCL);
    EXPECT_EQ(node.allreducesynchronizer().compressor(), AllReduceSynchronizer::NoneCompressor);
    EXPECT_EQ(node.allreducesynchronizer().group(), 0);
  }
}

TEST(AllReduceTest, CamelCaseOptionsAsInManifests) {
  const Strategy strategy = Build(FiveDense(), GpuNodes({1}), "AllReduce",
                                  {{"chunkSize", "1"}, {"allReduceSpec", "ring"}});
  EXPECT_EQ(strategy.node_config(4).allreducesynchronizer().group(), 4);
  EXPECT_EQ(strategy.node_config(0).allreducesynchronizer().spec(), AllReduceSynchronizer::RING);
}

TEST(AllReduceTest, CompressorParametersGoWithTheirCompressor) {
  const Strategy powersgd = Build(FiveDense(), GpuNodes({2}), "AllReduce",
                                  {{"compressor", "PowerSGDCompressor"},
                                   {"powersgdRank", "4"},
                                   {"powersgdStartStep", "10"},
                                   {"minCompressionElements", "1024"}});
  const auto& first = powersgd.node_config(0).allreducesynchronizer();
  EXPECT_EQ(first.compressor(), AllReduceSynchronizer::PowerSGDCompressor);
  EXPECT_EQ(first.powersgd_rank(), 4);
  EXPECT_EQ(first.powersgd_start_step(), 10);
  EXPECT_EQ(first.min_compression_elements(), 1024);
  EXPECT_EQ(first.topk_fraction(), 0.0F);  // not written for another compressor

  const Strategy topk = Build(FiveDense(), GpuNodes({2}), "AllReduce",
                              {{"compressor", "TopKCompressorEF"}, {"topk_fraction", "0.05"}});
  EXPECT_FLOAT_EQ(topk.node_config(2).allreducesynchronizer().topk_fraction(), 0.05F);
  EXPECT_EQ(topk.node_config(2).allreducesynchronizer().powersgd_rank(), 0);

  ExpectError(
      [&] {
        Build(FiveDense(), GpuNodes({2}), "AllReduce", {{"powersgd_rank", "2"}});
      },
      "option powersgd_rank applies only to compressor=PowerSGDCompressor");
  ExpectError(
      [&] {
        Build(FiveDense(), GpuNodes({2}), "AllReduce",
              {{"compressor", "TopKCompressorEF"}, {"topk_fraction", "1.5"}});
      },
      "option topk_fraction: expected a number in (0, 1], got '1.5'");
  ExpectError(
      [&] {
        Build(FiveDense(), GpuNodes({2}), "AllReduce",
              {{"compressor", "PowerSGDCompressor"}, {"powersgd_rank", "0"}});
      },
      "option powersgd_rank must be >= 1, got 0");
}

TEST(PartitionedArTest, RunningShardCounterDefinesGroups) {
  const std::vector<graph::Variable> variables = {
      FloatVariable("a", {4, 2}),  // 2 shards: counters 0,1 -> groups 0,0
      FloatVariable("b", {3}),     // 3 shards: counters 2,3,4 -> groups 0,1,1
      FloatVariable("c", {}),      // scalar: counter 5 -> group 1
      FloatVariable("d", {5, 5}),  // 5 shards: counters 6..10 -> groups 2,2,2,3,3
  };
  const Strategy strategy =
      Build(variables, GpuNodes({1, 1}), "PartitionedAR", {{"chunk_size", "3"}});
  const auto groups = [](const Strategy::Node& node) {
    std::vector<int> out;
    for (const auto& part : node.part_config()) {
      EXPECT_EQ(part.allreducesynchronizer().spec(), AllReduceSynchronizer::AUTO);
      out.push_back(part.allreducesynchronizer().group());
    }
    return out;
  };
  EXPECT_EQ(strategy.node_config(0).partitioner(), "2,1");
  EXPECT_EQ(groups(strategy.node_config(0)), (std::vector<int>{0, 0}));
  EXPECT_EQ(groups(strategy.node_config(1)), (std::vector<int>{0, 1, 1}));
  EXPECT_TRUE(strategy.node_config(2).partitioner().empty());
  EXPECT_EQ(strategy.node_config(2).allreducesynchronizer().group(), 1);
  EXPECT_EQ(strategy.node_config(2).allreducesynchronizer().spec(), AllReduceSynchronizer::AUTO);
  EXPECT_EQ(groups(strategy.node_config(3)), (std::vector<int>{2, 2, 2, 3, 3}));
  EXPECT_EQ(strategy.node_config(3).part_config(4).var_name(), "d/part_4:0");
}

TEST(RandomAxisPartitionArTest, AxisIsAmongDimsAboveOne) {
  const std::vector<graph::Variable> variables = {
      FloatVariable("row", {1, 6}),                   // only axis 1 qualifies: "1,2"
      FloatVariable("col", {6, 1}),                   // only axis 0: "2,1"
      FloatVariable("emb", {9, 4}, /*sparse=*/true),  // sparse: axis 0, 3 shards
      FloatVariable("one", {1, 1}),                   // nothing to cut
      FloatVariable("cf", {4, 4}, false, /*partitionable=*/false),
  };
  const Strategy strategy = Build(variables, GpuNodes({2}), "RandomAxisPartitionAR");
  EXPECT_EQ(strategy.node_config(0).partitioner(), "1,2");
  EXPECT_EQ(strategy.node_config(1).partitioner(), "2,1");
  EXPECT_EQ(strategy.node_config(2).partitioner(), "3,1");
  EXPECT_TRUE(strategy.node_config(3).partitioner().empty());
  EXPECT_TRUE(strategy.node_config(4).partitioner().empty());
}

TEST(RandomAxisPartitionArTest, ReproducibleForASeedAndBothAxesOccur) {
  std::vector<graph::Variable> variables;
  for (int i = 0; i < 64; ++i) variables.push_back(FloatVariable("v" + std::to_string(i), {4, 9}));
  const Strategy first = Build(variables, GpuNodes({2}), "RandomAxisPartitionAR", {{"seed", "7"}});
  const Strategy again = Build(variables, GpuNodes({2}), "RandomAxisPartitionAR", {{"seed", "7"}});
  const Strategy other = Build(variables, GpuNodes({2}), "RandomAxisPartitionAR", {{"seed", "8"}});
  EXPECT_EQ(first.SerializeAsString(), again.SerializeAsString());
  EXPECT_NE(first.SerializeAsString(), other.SerializeAsString());
  std::set<std::string> partitioners;
  for (const auto& node : first.node_config()) partitioners.insert(node.partitioner());
  // Axis 0 (dim 4) gives 2 shards, axis 1 (dim 9) gives 3; 64 draws see both.
  EXPECT_EQ(partitioners, (std::set<std::string>{"2,1", "1,3"}));
}

TEST(ParallaxTest, DenseAllReducedByOverallIndexSparseOnServers) {
  const std::vector<graph::Variable> variables = {
      FloatVariable("d0", {10}),
      FloatVariable("s1", {100, 8}, /*sparse=*/true),  // 3200 B -> a
      FloatVariable("d2", {10}),
      FloatVariable("s3", {50, 8}, /*sparse=*/true),  // 1600 B -> b
      FloatVariable("d4", {10}),
      FloatVariable("s5", {10, 8}, /*sparse=*/true),  // 320 B -> b (a=3200, b=1600)
  };
  const Strategy strategy = Build(variables, CpuNodes(2), "Parallax",
                                  {{"chunk_size", "2"}, {"local_proxy_variable", "true"}});
  EXPECT_EQ(strategy.node_config(0).allreducesynchronizer().group(), 0);
  EXPECT_EQ(strategy.node_config(2).allreducesynchronizer().group(), 1);
  EXPECT_EQ(strategy.node_config(4).allreducesynchronizer().group(), 2);
  EXPECT_EQ(strategy.node_config(0).allreducesynchronizer().spec(), AllReduceSynchronizer::NCCL);
  EXPECT_EQ(strategy.node_config(1).pssynchronizer().reduction_destination(), kA);
  EXPECT_EQ(strategy.node_config(3).pssynchronizer().reduction_destination(), kB);
  EXPECT_EQ(strategy.node_config(5).pssynchronizer().reduction_destination(), kB);
  // Sparse variables never get a proxy in Parallax.
  EXPECT_FALSE(strategy.node_config(1).pssynchronizer().local_replication());
}

TEST(CompilerTest, IdIsADeterministicDigest) {
  const Strategy first = Build(FiveDense(), CpuNodes(3), "PSLoadBalancing");
  const Strategy second = Build(FiveDense(), CpuNodes(3), "PSLoadBalancing");
  const Strategy other = Build(FiveDense(), CpuNodes(2), "PSLoadBalancing");
  EXPECT_EQ(first.id(), second.id());
  EXPECT_NE(first.id(), other.id());
  EXPECT_EQ(first.id().rfind("strategy-", 0), 0u);
}

TEST(CompilerTest, OptionErrorsAreClear) {
  const auto vars = FiveDense();
  const ResourceSpec cpus = CpuNodes(2);
  ExpectError(
      [&] {
        Build(vars, cpus, "AllReduce", {{"chunk_size", "0"}});
      },
      "chunk_size must be >= 1");
  ExpectError(
      [&] {
        Build(vars, cpus, "PS", {{"sync", "false"}, {"staleness", "2"}});
      },
      "staleness=2 needs sync=true");
  ExpectError([&] { Build(vars, cpus, "PSLB"); }, "unknown strategy builder 'PSLB'; valid: PS, ");
  ExpectError(
      [&] {
        Build(vars, cpus, "AllReduce", {{"compressor", "Zip"}});
      },
      "valid: NoneCompressor, HorovodCompressor, HorovodCompressorEF");
  ExpectError(
      [&] {
        Build(vars, cpus, "AllReduce", {{"all_reduce_spec", "MPI"}});
      },
      "valid: AUTO, NCCL, RING");
  ExpectError(
      [&] {
        Build(vars, cpus, "AllReduce", {{"staleness", "1"}});
      },
      "builder AllReduce does not take option 'staleness'; it takes: all_reduce_spec, "
      "chunk_size, compressor");
  ExpectError([&] { Build(vars, cpus, "PS", {{"sync", "maybe"}}); }, "expected true or false");
  ExpectError(
      [&] {
        Build(vars, cpus, "PartitionedAR", {{"chunk_size", "x"}});
      },
      "expected an integer");
  ExpectError(
      [&] {
        Build(vars, cpus, "AllReduce", {{"chunkSize", "2"}, {"chunk_size", "3"}});
      },
      "given twice");
  ExpectError(
      [&] {
        Build(vars, cpus, "Auto", {{"chunk_size", "4"}});
      },
      "builder Auto does not take option 'chunk_size'; it takes: staleness, sync");
}

TEST(CompilerTest, ColocationErrorsAreClear) {
  const auto vars = FiveDense();
  const ResourceSpec cpus = CpuNodes(2);
  ExpectError(
      [&] {
        Build(vars, cpus, "PSLoadBalancing", {}, {{"v0", "nope"}});
      },
      "'nope', which is not a trainable variable");
  ExpectError(
      [&] {
        Build(vars, cpus, "PSLoadBalancing", {}, {{"v0", "v1"}, {"v1", "v2"}});
      },
      "'v1' is in colocation groups 1 and 2");
  ExpectError(
      [&] {
        Build(vars, cpus, "AllReduce", {}, {{"v0", "v1"}});
      },
      "colocation groups do not apply");
}

TEST(CompilerTest, NoTrainableVariablesIsAnError) {
  ExpectError([&] { Build({}, CpuNodes(1), "PS"); }, "no trainable variables");
}

TEST(CompilerTest, EveryVariableAppearsOnceInModelOrder) {
  const auto vars = FiveDense();
  for (const std::string& builder : BuilderNames()) {
    const Strategy strategy = Build(vars, GpuNodes({2, 1}), builder);
    ASSERT_EQ(strategy.node_config_size(), 5) << builder;
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(strategy.node_config(i).var_name(), vars[static_cast<size_t>(i)].name) << builder;
    }
  }
}

}  // namespace
}  // namespace autodist::strategy
