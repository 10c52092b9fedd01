// The correctness contract of synchronous data parallelism, end to end: `autodist run` with N
// workers x batch b under every parameter-server builder ends with the same parameters as one
// process training with batch N*b over the same samples (1e-5 relative) — on a dense MLP, and on
// an embedding model whose sparse gradients are cut across partitioned shards.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <regex>

#include "runtime/cli/trainer_options.h"
#include "runtime/exec/trainer.h"
#include "runtime/job/job_parser.h"
#include "tests/launcher/run_job_test_util.h"
#include "tests/onnx_graph_builder.h"

namespace autodist::launcher {
namespace {

using autodist::testing::AddInitializer;
using autodist::testing::AddInput;
using autodist::testing::AddNode;
using autodist::testing::AddOutput;
using autodist::testing::NewModel;
using autodist::testing::SetIntAttribute;

// The single-process reference: the same manifest with one worker and the global batch.
std::map<std::string, std::vector<float>> OneProcessReference(JobParams params,
                                                              const TempDir& dir) {
  params.batch *= params.workers * params.replicas_per_worker;
  params.workers = 1;
  params.replicas_per_worker = 1;
  const std::string checkpoints = dir / "reference-ckpt";
  const job::JobSpec job =
      job::ParseJob(JobYaml(params, checkpoints), "reference.yaml", dir.path().string());
  exec::Train(cli::TrainerOptionsFromJob(job, 0, 1, 1), [](const std::string&) {});
  return CheckpointVariables(checkpoints);
}

// Returns the run's outcome (its summary lists the parameter servers' traffic).
RunOutcome ExpectDistributedMatchesOneProcess(const JobParams& params, double relative = 1e-5) {
  TempDir dir;
  const std::string checkpoints = dir / "ckpt";
  const RunOutcome outcome =
      RunManifest(OptionsFor(dir, WriteManifest(dir, JobYaml(params, checkpoints))));
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err << outcome.out;
  if (outcome.exit_code != 0) return outcome;
  EXPECT_NE(outcome.out.find("succeeded"), std::string::npos) << outcome.out;
  ExpectSameVariables(OneProcessReference(params, dir), CheckpointVariables(checkpoints), relative);
  return outcome;
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

class AllReduceBuilderParity : public ::testing::TestWithParam<Case> {};

TEST_P(AllReduceBuilderParity, TwoWorkersMatchOneProcessWithTheGlobalBatch) {
  JobParams params;
  params.builder = GetParam().builder;
  params.model = GetParam().model;
  params.parameter_servers = GetParam().parameter_servers;
  ExpectDistributedMatchesOneProcess(params);
}

INSTANTIATE_TEST_SUITE_P(
    Builders, AllReduceBuilderParity,
    ::testing::Values(Case{"AllReduce", "mlp", 0}, Case{"AllReduce", "embedding", 0},
                      Case{"PartitionedAR", "mlp", 0}, Case{"PartitionedAR", "embedding", 0},
                      Case{"RandomAxisPartitionAR", "mlp", 0}, Case{"Parallax", "embedding", 1}),
    [](const ::testing::TestParamInfo<Case>& param) {
      return std::string(param.param.builder) + "_" + param.param.model;
    });

// The bytes every parameter server of a run's summary says it sent ("pulled 1.2 MiB"), summed.
double PulledBytes(const std::string& summary) {
  static const std::regex kPulled(R"(pulled ([0-9.]+) (B|KiB|MiB|GiB))");
  double total = 0;
  for (auto it = std::sregex_iterator(summary.begin(), summary.end(), kPulled);
       it != std::sregex_iterator(); ++it) {
    const std::string unit = (*it)[2];
    const double scale = unit == "B" ? 1 : unit == "KiB" ? 1024 : unit == "MiB" ? 1 << 20 : 1 << 30;
    total += std::stod((*it)[1]) * scale;
  }
  return total;
}

// With an optimizer that moves only the rows a sparse gradient has, a worker pulls of the
// embedding's [1000, 64] table (250 KiB) only the rows changed since the version it holds, and
// still ends with the one-process parameters. Whole pulls would come to at least 2 workers x
// (1 + 5 steps) x 250 KiB = 3 MiB; the rows of a step are at most 2 x 8 samples' tokens, about
// 850 KiB in all with the first whole pulls. The 2 MiB bound leaves room for whatever else a run
// may pull (a chief that pulls the checkpoint itself takes the table and, under Adam, its two
// moments: 750 KiB) and still tells changed rows from whole tables.
struct RowsCase {
  const char* name;
  const char* builder;
  int parameter_servers;
  int replicas_per_worker;
  const char* options;
  const char* optimizer;
};

class ChangedRowsParity : public ::testing::TestWithParam<RowsCase> {};

TEST_P(ChangedRowsParity, WorkersPullOnlyChangedRowsAndMatchOneProcess) {
  const RowsCase& c = GetParam();
  JobParams params;
  params.model = "embedding";
  params.builder = c.builder;
  params.parameter_servers = c.parameter_servers;
  params.replicas_per_worker = c.replicas_per_worker;
  params.batch = 8 / c.replicas_per_worker;
  params.strategy_options = c.options;
  params.optimizer = c.optimizer;
  const RunOutcome outcome = ExpectDistributedMatchesOneProcess(params);
  if (outcome.exit_code != 0) return;
  const double pulled = PulledBytes(outcome.out);
  EXPECT_GT(pulled, 2 * 250.0 * 1024) << outcome.out;  // the first whole pulls, at least
  EXPECT_LT(pulled, 2.0 * 1024 * 1024) << outcome.out;
}

constexpr const char* kPlainSgd = "name: sgd\n      lr: 0.5";

INSTANTIATE_TEST_SUITE_P(
    Builders, ChangedRowsParity,
    ::testing::Values(RowsCase{"PS", "PS", 1, 1, "", kPlainSgd},
                      RowsCase{"PartitionedPS", "PartitionedPS", 2, 1, "", kPlainSgd},
                      RowsCase{"UnevenPartitionedPS", "UnevenPartitionedPS", 1, 1, "", kPlainSgd},
                      RowsCase{"Parallax", "Parallax", 1, 1, "", kPlainSgd},
                      RowsCase{"PartitionedPS_proxy", "PartitionedPS", 2, 2,
                               "      localProxyVariable: true\n", kPlainSgd},
                      RowsCase{"PSLoadBalancing_own_pushes", "PSLoadBalancing", 1, 2,
                               "      localProxyVariable: false\n", kPlainSgd},
                      RowsCase{
                          "PS_lazy_adam", "PS", 1, 1, "",
                          "name: adam\n      lr: 0.001\n      eps: 0.001\n      lazySparse: true"}),
    [](const ::testing::TestParamInfo<RowsCase>& param) { return std::string(param.param.name); });

TEST(RunParityTest, MomentumMovesEveryRowSoWorkersPullWholeTables) {
  JobParams params;
  params.model = "embedding";
  params.builder = "PS";
  const RunOutcome outcome = ExpectDistributedMatchesOneProcess(params);  // momentum 0.9
  if (outcome.exit_code != 0) return;
  EXPECT_GT(PulledBytes(outcome.out), 2 * 6 * 250.0 * 1024) << outcome.out;
}

// AutoDist's integration suite's strategy list, end to end: the uncompressed ones to 1e-5, the
// float16 ones within float16 rounding.
struct IntegrationCase {
  const char* name;
  const char* builder;
  const char* options;
  int parameter_servers;
  double relative;
};

class AutoDistIntegrationList : public ::testing::TestWithParam<IntegrationCase> {};

TEST_P(AutoDistIntegrationList, RunsAndMatchesOneProcess) {
  const IntegrationCase& c = GetParam();
  JobParams params;
  params.model = "embedding";
  params.builder = c.builder;
  params.strategy_options = c.options;
  params.parameter_servers = c.parameter_servers;
  params.replicas_per_worker = 2;
  params.batch = 4;
  ExpectDistributedMatchesOneProcess(params, c.relative);
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, AutoDistIntegrationList,
    ::testing::Values(IntegrationCase{"PS", "PS", "", 1, 1e-5},
                      IntegrationCase{"PartitionedPS_proxy", "PartitionedPS",
                                      "      localProxyVariable: true\n", 2, 1e-5},
                      IntegrationCase{"AllReduce_None", "AllReduce",
                                      "      compressor: NoneCompressor\n", 0, 1e-5},
                      IntegrationCase{"AllReduce_Horovod", "AllReduce",
                                      "      compressor: HorovodCompressor\n", 0, 1e-3},
                      IntegrationCase{"AllReduce_HorovodEF", "AllReduce",
                                      "      compressor: HorovodCompressorEF\n", 0, 1e-3},
                      IntegrationCase{"PSLoadBalancing_proxy", "PSLoadBalancing",
                                      "      localProxyVariable: true\n", 2, 1e-5},
                      IntegrationCase{"Parallax_proxy", "Parallax",
                                      "      localProxyVariable: true\n", 1, 1e-5},
                      IntegrationCase{"PartitionedAR", "PartitionedAR", "", 0, 1e-5},
                      IntegrationCase{"UnevenPartitionedPS_proxy", "UnevenPartitionedPS",
                                      "      localProxyVariable: true\n", 1, 1e-5},
                      IntegrationCase{"RandomAxisPartitionAR_chunk4", "RandomAxisPartitionAR",
                                      "      chunkSize: 4\n", 0, 1e-5}),
    [](const ::testing::TestParamInfo<IntegrationCase>& param) { return param.param.name; });

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

// A float32 .npy file of `shape` (format version 1.0).
void WriteNpy(const std::string& path, const std::vector<int64_t>& shape,
              const std::vector<float>& values) {
  std::string dims;
  for (int64_t dim : shape) dims += std::to_string(dim) + ", ";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  const auto length = static_cast<uint16_t>(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char*>(&length), 2);
  out << header;
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
}

// y = x·W + b with loss mean((y - target)^2): AutoDist's linear-regression integration case.
void WriteLinearModel(const std::string& path, const std::vector<float>& w, float b) {
  onnx::ModelProto model = NewModel("linear", 13);
  onnx::GraphProto* graph = model.mutable_graph();
  AddInput(graph, "x", {-1, 2});
  AddInput(graph, "y", {-1, 1});
  AddInitializer(graph, "W", {2, 1}, w);
  AddInitializer(graph, "b", {1}, {b});
  AddNode(graph, "MatMul", {"x", "W"}, {"xw"}, "xw");
  AddNode(graph, "Add", {"xw", "b"}, {"prediction"}, "prediction");
  AddNode(graph, "Sub", {"prediction", "y"}, {"error"}, "error");
  AddNode(graph, "Mul", {"error", "error"}, {"squared"}, "squared");
  SetIntAttribute(AddNode(graph, "ReduceMean", {"squared"}, {"loss"}, "loss"), "keepdims", 0);
  AddOutput(graph, "loss", {});
  std::ofstream(path, std::ios::binary) << model.SerializeAsString();
}

// AutoDist's integration value check: two workers with different data, SGD lr 0.01; after one
// synchronous step b equals b0 - 0.01 x the mean of the two workers' gradients.
TEST(RunParityTest, LinearModelBiasMovesByTheMeanGradient) {
  TempDir dir;
  const std::vector<float> w = {0.5F, -1.0F};
  const float b0 = 0.25F;
  WriteLinearModel(dir / "linear.onnx", w, b0);
  const std::vector<float> x = {1.0F, 2.0F, 3.0F, -1.0F};  // one row per worker
  const std::vector<float> y = {4.0F, -2.0F};
  WriteNpy(dir / "x.npy", {2, 2}, x);
  WriteNpy(dir / "y.npy", {2, 1}, y);
  const std::string yaml = fmt::format(
      "apiVersion: autodist.io/v1alpha1\n"
      "kind: AutoDistJob\n"
      "metadata:\n  name: linear\n"
      "spec:\n"
      "  model:\n    path: {0}/linear.onnx\n"
      "  data:\n    format: files\n    train:\n      x: {0}/x.npy\n      y: {0}/y.npy\n"
      "    batchSizePerReplica: 1\n    shuffle: false\n"
      "  training:\n    steps: 1\n    optimizer:\n      name: sgd\n      lr: 0.01\n"
      "    checkpoint:\n      path: {0}/ckpt\n      resume: false\n"
      "  strategy:\n    builder: PS\n"
      "  resources:\n    workers: 2\n    parameterServers: 1\n",
      dir.path().string());
  const RunOutcome outcome = RunManifest(OptionsFor(dir, WriteManifest(dir, yaml)));
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  // d loss / d b for one sample is 2 (x·W + b - y).
  double gradient_sum = 0;
  for (int i = 0; i < 2; ++i) {
    gradient_sum += 2.0 * (x[2 * i] * w[0] + x[2 * i + 1] * w[1] + b0 - y[i]);
  }
  const auto variables = CheckpointVariables(dir / "ckpt");
  ASSERT_EQ(variables.at("b").size(), 1u);
  EXPECT_NEAR(variables.at("b")[0], b0 - 0.01 * gradient_sum / 2, 1e-6);
  // The bias moved: both workers' (different) gradients reached the parameter server.
  EXPECT_GT(std::abs(variables.at("b")[0] - b0), 1e-3);
}

}  // namespace
}  // namespace autodist::launcher
