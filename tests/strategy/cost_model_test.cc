// The cost model's arithmetic on hand-computed cases (docs/strategies.md, "Cost model"): ring
// all-reduce, parameter-server phases, full-duplex links, co-located servers, compressors,
// sparse rows and the overlap with backward.
#include "runtime/strategy/cost_model.h"

#include <gtest/gtest.h>

#include "runtime/strategy/compiler.h"
#include "tests/strategy/test_support.h"

namespace autodist::strategy {
namespace {

using testing::FloatVariable;

constexpr double kTolerance = 1e-9;  // seconds

// 1 ms forward, 2 ms backward, 0.5 ms update; 100 us per collective, 250 us per PS round.
StepProfile Profile(std::map<std::string, double> ready) {
  StepProfile profile = DefaultRuntimeCosts();
  profile.forward_seconds = 1e-3;
  profile.backward_seconds = 2e-3;
  profile.update_seconds = 0.5e-3;
  profile.collective_seconds = 100e-6;
  profile.ps_round_seconds = 250e-6;
  profile.ready_fraction = std::move(ready);
  return profile;
}

// Two workers (and `ps` dedicated servers) on links that carry 125e6 bytes of payload per
// second: 1 Gbit/s over what TCP's and Ethernet's headers take.
ResourceSpec Nodes(int ps, double gbps = 1 / kTcpPayloadFraction) {
  ReplicaCounts counts;
  counts.workers = 2;
  counts.parameter_servers = ps;
  counts.network_bandwidth = gbps;
  return ResourceSpec::FromReplicaCounts(counts);
}

StepPrediction Predict(const std::vector<graph::Variable>& variables, const ResourceSpec& nodes,
                       const std::string& builder, const BuilderOptions& options,
                       const StepProfile& profile) {
  CompileRequest request;
  request.builder = builder;
  request.options = options;
  const CompileResult compiled = Compile(variables, nodes, request);
  return PredictStep(compiled.strategy, variables, nodes, profile);
}

const std::vector<graph::Variable> kOneMegabyte = {FloatVariable("w", {250000})};

TEST(CostModelTest, RingAllReduceOverlappedWithBackward) {
  const StepPrediction p = Predict(kOneMegabyte, Nodes(0), "AllReduce", {}, Profile({{"w", 0.0}}));
  // Ready when backward starts (1 ms); 2 (W-1)/W x 1e6 B at 125e6 B/s = 8 ms, 2 (W-1) latencies
  // of 50 us and one collective's 100 us: 8.2 ms, to 9.2 ms; then the update, 0.5 ms.
  EXPECT_NEAR(p.total_seconds, 9.7e-3, kTolerance);
  EXPECT_NEAR(p.compute_seconds, 3.5e-3, kTolerance);
  EXPECT_NEAR(p.communication_seconds, 6.2e-3, kTolerance);
  EXPECT_EQ(p.link_bytes.at("worker-0"), 2'000'000);  // sent and received
  EXPECT_EQ(p.link_bytes.at("worker-1"), 2'000'000);
  EXPECT_EQ(p.collectives, 1);
  EXPECT_EQ(p.ps_rounds, 0);
}

TEST(CostModelTest, ParameterServerPushUpdatePull) {
  const StepPrediction p = Predict(kOneMegabyte, Nodes(1), "PS", {}, Profile({{"w", 0.0}}));
  // After backward (3 ms): the server receives 2 x 1e6 B (16 ms), applies (0.5 ms), sends
  // 2 x 1e6 B (16 ms), plus one round (250 us) and a round trip (100 us).
  EXPECT_NEAR(p.total_seconds, 35.85e-3, kTolerance);
  EXPECT_NEAR(p.compute_seconds, 3.5e-3, kTolerance);
  EXPECT_EQ(p.link_bytes.at("ps-0"), 4'000'000);
  EXPECT_EQ(p.BusiestLink(), std::make_pair(std::string("ps-0"), int64_t{4'000'000}));
  EXPECT_EQ(p.collectives, 0);
  EXPECT_EQ(p.ps_rounds, 1);
}

TEST(CostModelTest, AServerOnAWorkersNodeCostsThatWorkerNoLink) {
  // Without dedicated servers PS puts w on worker-0: only worker-1's push and pull travel.
  const StepPrediction p = Predict(kOneMegabyte, Nodes(0), "PS", {}, Profile({{"w", 0.0}}));
  EXPECT_NEAR(p.total_seconds, 3e-3 + 8e-3 + 0.5e-3 + 8e-3 + 0.35e-3, kTolerance);
  EXPECT_EQ(p.link_bytes.at("worker-1"), 2'000'000);
  EXPECT_EQ(p.link_bytes.at("worker-0"), 2'000'000);
}

TEST(CostModelTest, APsStepWaitsForItsWireShareOfTheWireOnly) {
  // The step of AServerOnAWorkersNodeCostsThatWorkerNoLink waits for a quarter of its 16 ms of
  // wire; the update, the round and the round trip stay whole.
  StepProfile profile = Profile({{"w", 0.0}});
  profile.ps_wire_share = 0.25;
  const StepPrediction p = Predict(kOneMegabyte, Nodes(0), "PS", {}, profile);
  EXPECT_NEAR(p.total_seconds, 3e-3 + 4e-3 + 0.5e-3 + 0.35e-3, kTolerance);
  EXPECT_EQ(p.link_bytes.at("worker-1"), 2'000'000);  // the bytes are all still sent
  // An all-reduce's wire is not a parameter server's.
  EXPECT_NEAR(Predict(kOneMegabyte, Nodes(0), "AllReduce", {}, profile).total_seconds,
              Predict(kOneMegabyte, Nodes(0), "AllReduce", {}, Profile({{"w", 0.0}})).total_seconds,
              kTolerance);
}

TEST(CostModelTest, CompressorsChangeWireBytesAndAddTheirCompute) {
  const StepProfile profile = Profile({{"m", 0.0}});
  const std::vector<graph::Variable> matrix = {FloatVariable("m", {500, 500})};  // 1e6 B
  // Compression's compute delays the step by all of it (the cores are backward's too).
  // float16 with error feedback: half the bytes (4 ms + 200 us, from 1 ms) and 2 ns per element
  // (0.5 ms).
  const StepPrediction fp16 =
      Predict(matrix, Nodes(0), "AllReduce", {{"compressor", "HorovodCompressorEF"}}, profile);
  EXPECT_NEAR(fp16.total_seconds, 1e-3 + 4.2e-3 + 0.5e-3 + 0.5e-3, kTolerance);
  EXPECT_NEAR(fp16.compute_seconds, 3.5e-3 + 0.5e-3, kTolerance);
  // PowerSGD rank 1: P and Q of 500 floats each, two all-reduces of 2000 B (16 us + 200 us
  // each), finished before backward is; then 4 ns per element (1 ms).
  const StepPrediction powersgd =
      Predict(matrix, Nodes(0), "AllReduce", {{"compressor", "PowerSGDCompressor"}}, profile);
  EXPECT_NEAR(powersgd.total_seconds, 3e-3 + 1e-3 + 0.5e-3, kTolerance);
  EXPECT_EQ(powersgd.link_bytes.at("worker-0"), 2 * (2000 + 2000));
  EXPECT_EQ(powersgd.collectives, 2);  // P and Q
  // TopK 1%: 2500 (index, value) pairs all-gathered as indices (20000 B: 160 us + 150 us) and
  // values (10000 B: 80 us + 150 us), done before backward is; then 6 ns per element (1.5 ms).
  const StepPrediction topk =
      Predict(matrix, Nodes(0), "AllReduce", {{"compressor", "TopKCompressorEF"}}, profile);
  EXPECT_NEAR(topk.total_seconds, 3e-3 + 1.5e-3 + 0.5e-3, kTolerance);
  EXPECT_EQ(topk.link_bytes.at("worker-1"), 2 * 30000);
  // Without compression the same matrix is wire-bound.
  const StepPrediction plain = Predict(matrix, Nodes(0), "AllReduce", {}, profile);
  EXPECT_GT(plain.total_seconds, fp16.total_seconds);
  EXPECT_GT(fp16.total_seconds, powersgd.total_seconds);
}

TEST(CostModelTest, SparseTablesPushTouchedRowsAndPullWholeValuesOrChangedRows) {
  const std::vector<graph::Variable> table = {FloatVariable("t", {100000, 64}, true)};
  StepProfile profile = Profile({{"t", 0.0}});
  profile.sparse_rows = {{"t", 32}};
  const StepPrediction p = Predict(table, Nodes(1), "PS", {}, profile);
  // Each worker pushes 32 rows of 256 B with their int64 indices and pulls the whole table: by
  // default (an optimizer not known to leave absent rows alone) every row moves each step.
  EXPECT_EQ(p.link_bytes.at("worker-0"), 32 * (256 + 8) + 25'600'000);

  // With plain SGD the server sends only the rows the step changed: both workers' 32 rows.
  CompileRequest request;
  request.builder = "PS";
  const CompileResult compiled = Compile(table, Nodes(1), request);
  const StepPrediction rows =
      PredictStep(compiled.strategy, table, Nodes(1), profile, {}, OptimizerTraits{true});
  EXPECT_EQ(rows.link_bytes.at("worker-0"), 32 * (256 + 8) + 2 * 32 * (256 + 8));
  EXPECT_LT(rows.total_seconds, p.total_seconds / 10);
  // Rows never cost more than the whole value: a step that touches every row pulls the table.
  profile.sparse_rows = {{"t", 99'000}};
  const StepPrediction most =
      PredictStep(compiled.strategy, table, Nodes(1), profile, {}, OptimizerTraits{true});
  EXPECT_EQ(most.link_bytes.at("worker-0"), 99'000 * (256 + 8) + 25'600'000);
  // Workers on GPUs take no rows in place (sync/ps_part.h): whole tables again.
  ReplicaCounts gpus;
  gpus.workers = 2;
  gpus.gpus_per_worker = 1;
  gpus.parameter_servers = 1;
  gpus.network_bandwidth = 1 / kTcpPayloadFraction;
  const ResourceSpec gpu_nodes = ResourceSpec::FromReplicaCounts(gpus);
  profile.sparse_rows = {{"t", 32}};
  const StepPrediction on_gpus = PredictStep(Compile(table, gpu_nodes, request).strategy, table,
                                             gpu_nodes, profile, {}, OptimizerTraits{true});
  EXPECT_EQ(on_gpus.link_bytes.at("worker-0"), 32 * (256 + 8) + 25'600'000);
}

TEST(CostModelTest, ARowSparseGradientIsAllGatheredAsIndicesAndRowsWithTheirCounts) {
  const std::vector<graph::Variable> table = {FloatVariable("t", {100000, 64}, true)};
  StepProfile profile = Profile({{"t", 0.0}});
  profile.backward_seconds = 0;
  profile.sparse_rows = {{"t", 32}};
  const StepPrediction p = Predict(table, Nodes(0), "AllReduce", {}, profile);
  // Indices (256 B: 2.048 us + 50 us + 100 us), rows (8192 B: 65.536 us + 150 us), and the two
  // count exchanges (150 us each), from the end of forward (1 ms); then the update.
  EXPECT_NEAR(p.total_seconds, 1e-3 + 152.048e-6 + 215.536e-6 + 300e-6 + 0.5e-3, kTolerance);
  EXPECT_EQ(p.link_bytes.at("worker-0"), 2 * (256 + 8192));
  EXPECT_EQ(p.collectives, 4);
}

TEST(CostModelTest, AGroupReadyOnlyAtTheEndOfBackwardStartsThere) {
  const std::vector<graph::Variable> two = {FloatVariable("early", {250000}),
                                            FloatVariable("late", {250000})};
  const StepPrediction p = Predict(two, Nodes(0), "AllReduce", {{"chunk_size", "1"}},
                                   Profile({{"early", 1.0}, {"late", 0.0}}));
  // "late" (model order last, first in backward) goes at 1 ms and takes 8.2 ms; "early" is
  // ready at 3 ms but waits for the communication thread: 9.2 + 8.2 ms, then the update.
  EXPECT_NEAR(p.total_seconds, 17.4e-3 + 0.5e-3, kTolerance);
}

TEST(CostModelTest, FasterLinksNeverPredictASlowerStep) {
  for (const char* builder : {"PS", "AllReduce", "PartitionedPS"}) {
    const double slow =
        Predict(kOneMegabyte, Nodes(1, 1), builder, {}, Profile({{"w", 0.5}})).total_seconds;
    const double fast =
        Predict(kOneMegabyte, Nodes(1, 25), builder, {}, Profile({{"w", 0.5}})).total_seconds;
    EXPECT_LT(fast, slow) << builder;
  }
}

TEST(CostModelTest, AllReducesOverheadIsAddedWhereWorkersAllReduce) {
  StepProfile profile = Profile({{"w", 0.0}});
  const double without = Predict(kOneMegabyte, Nodes(0), "AllReduce", {}, profile).total_seconds;
  const double ps = Predict(kOneMegabyte, Nodes(1), "PS", {}, profile).total_seconds;
  profile.all_reduce_overhead_seconds = 0.7e-3;
  // Parameter servers pay their round instead (calibrated on a run of their own).
  EXPECT_NEAR(Predict(kOneMegabyte, Nodes(1), "PS", {}, profile).total_seconds, ps, kTolerance);
  const StepPrediction with = Predict(kOneMegabyte, Nodes(0), "AllReduce", {}, profile);
  EXPECT_NEAR(with.total_seconds, without + 0.7e-3, kTolerance);
  EXPECT_NEAR(with.communication_seconds, 6.2e-3 + 0.7e-3, kTolerance);
  // One worker synchronizes with no one.
  ReplicaCounts alone;
  alone.workers = 1;
  const ResourceSpec one = ResourceSpec::FromReplicaCounts(alone);
  const StepPrediction single = Predict(kOneMegabyte, one, "AllReduce", {}, profile);
  profile.all_reduce_overhead_seconds = 0;
  EXPECT_NEAR(single.total_seconds,
              Predict(kOneMegabyte, one, "AllReduce", {}, profile).total_seconds, kTolerance);
}

TEST(CostModelTest, DuplexEfficiencySlowsLinksCarryingDataBothWaysOnly) {
  StepProfile profile = Profile({{"w", 0.0}});
  profile.duplex_efficiency = 0.5;
  // A collective sends and receives at once: its 8 ms of wire take 16 ms.
  const StepPrediction ring = Predict(kOneMegabyte, Nodes(0), "AllReduce", {}, profile);
  EXPECT_NEAR(ring.total_seconds, 9.7e-3 + 8e-3, kTolerance);
  // One dedicated server: each phase moves one way on every link, at the payload rate.
  const StepPrediction one_way = Predict(kOneMegabyte, Nodes(1), "PS", {}, profile);
  EXPECT_NEAR(one_way.total_seconds, 35.85e-3, kTolerance);
  // Two halves on servers on the two workers: each worker pushes a half to the other while it
  // receives the other's (0.5e6 B each way: 4 ms, at half the rate 8 ms), and so on the pull.
  const std::vector<graph::Variable> halves = {FloatVariable("a", {125000}),
                                               FloatVariable("b", {125000})};
  const StepProfile both = Profile({{"a", 0.0}, {"b", 0.0}});
  StepProfile slow = both;
  slow.duplex_efficiency = 0.5;
  const double full = Predict(halves, Nodes(0), "PSLoadBalancing", {}, both).total_seconds;
  const double halved = Predict(halves, Nodes(0), "PSLoadBalancing", {}, slow).total_seconds;
  EXPECT_NEAR(halved - full, 4e-3 + 4e-3, kTolerance);
  // Uneven halves: only the bytes crossing both ways at once go at the duplex efficiency. "big"
  // (0.75e6 B) and "small" (0.25e6 B) land on different workers: each phase moves 0.25e6 B both
  // ways (2 ms, at half the rate 4 ms) and 0.5e6 B more one way (4 ms).
  const std::vector<graph::Variable> uneven = {FloatVariable("big", {187500}),
                                               FloatVariable("small", {62500})};
  StepProfile uneven_full = Profile({{"big", 0.0}, {"small", 0.0}});
  StepProfile uneven_slow = uneven_full;
  uneven_slow.duplex_efficiency = 0.5;
  const double fast = Predict(uneven, Nodes(0), "PSLoadBalancing", {}, uneven_full).total_seconds;
  const double slowed = Predict(uneven, Nodes(0), "PSLoadBalancing", {}, uneven_slow).total_seconds;
  EXPECT_NEAR(slowed - fast, 2e-3 + 2e-3, kTolerance);
}

TEST(CostModelTest, OverlapEfficiencySlowsOnlyWhatRunsBesideBackward) {
  // Ready when backward starts (1 ms), 8.2 ms of collective, backward until 3 ms: at half speed
  // the 2 ms beside backward get 1 ms of it done, the other 7.2 ms follow: to 10.2 ms, then the
  // update.
  StepProfile profile = Profile({{"w", 0.0}});
  profile.overlap_efficiency = 0.5;
  EXPECT_NEAR(Predict(kOneMegabyte, Nodes(0), "AllReduce", {}, profile).total_seconds, 10.7e-3,
              kTolerance);
  // A collective that starts after backward is as fast as ever.
  StepProfile late = Profile({{"w", 1.0}});
  const double as_fast = Predict(kOneMegabyte, Nodes(0), "AllReduce", {}, late).total_seconds;
  late.overlap_efficiency = 0.5;
  EXPECT_NEAR(Predict(kOneMegabyte, Nodes(0), "AllReduce", {}, late).total_seconds, as_fast,
              kTolerance);
  // One that fits beside backward even at the efficiency ends inside it: a fast link.
  StepProfile fits = Profile({{"w", 0.0}});
  fits.overlap_efficiency = 0.5;
  const StepPrediction fast = Predict(kOneMegabyte, Nodes(0, 100), "AllReduce", {}, fits);
  EXPECT_NEAR(fast.total_seconds, 3.5e-3, kTolerance);
}

}  // namespace
}  // namespace autodist::strategy
