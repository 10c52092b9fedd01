// Every builder on every real fixture model and resource spec: invariants that must hold for any
// combination, then exact expectations on real models worked out by hand (comments show the
// arithmetic, from the variable sizes `autodist inspect` reports and AutoDist's builder rules).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/graph/graph_item.h"
#include "runtime/strategy/compiler.h"
#include "runtime/strategy/sharding.h"
#include "runtime/strategy/summary.h"

namespace autodist::strategy {
namespace {

using autodist::proto::AllReduceSynchronizer;
using autodist::proto::Strategy;

const std::vector<std::string> kModels = {"mlp", "cnn", "embedding", "control_flow"};

// The fixture specs with their replicas and PS candidates derived by hand from the YAML and the
// rules in resource_spec.h: replicas are every GPU in node order, then the CPUs of GPU-less
// nodes; PS candidates are CPU:0 of each node plus its further CPUs when it has no GPU.
struct SpecFixture {
  std::string name;
  std::vector<std::string> replicas;
  std::vector<std::string> ps_candidates;
};

const std::vector<SpecFixture>& Specs() {
  static const auto* specs = new std::vector<SpecFixture>{
      {"one_node_one_gpu", {"192.168.0.1:GPU:0"}, {"192.168.0.1:CPU:0"}},
      {"one_node_two_gpus", {"192.168.0.1:GPU:0", "192.168.0.1:GPU:1"}, {"192.168.0.1:CPU:0"}},
      {"two_nodes_uneven_gpus",
       {"192.168.0.1:GPU:0", "192.168.0.1:GPU:1", "192.168.0.2:GPU:0"},
       {"192.168.0.1:CPU:0", "192.168.0.2:CPU:0"}},
      {"cpu_only_nodes",
       {"192.168.0.1:CPU:0", "192.168.0.1:CPU:1", "192.168.0.2:CPU:0"},
       {"192.168.0.1:CPU:0", "192.168.0.1:CPU:1", "192.168.0.2:CPU:0"}},
      {"several_ps",
       {"192.168.0.1:CPU:0", "192.168.0.2:CPU:0", "192.168.0.3:CPU:0"},
       {"192.168.0.1:CPU:0", "192.168.0.2:CPU:0", "192.168.0.3:CPU:0"}},
  };
  return *specs;
}

const SpecFixture& SpecNamed(const std::string& name) {
  for (const SpecFixture& spec : Specs()) {
    if (spec.name == name) return spec;
  }
  throw std::invalid_argument("no spec fixture " + name);
}

// Models are loaded once: each test only reads them.
const std::vector<graph::Variable>& ModelVariables(const std::string& model) {
  static auto* cache = new std::map<std::string, std::vector<graph::Variable>>();
  auto it = cache->find(model);
  if (it == cache->end()) {
    const graph::GraphItem item =
        graph::GraphItem::Load(std::string(AUTODIST_FIXTURES_DIR) + "/models/" + model + ".onnx");
    it = cache->emplace(model, item.TrainableVariables()).first;
  }
  return it->second;
}

ResourceSpec LoadSpec(const std::string& name) {
  return ResourceSpec::FromYamlFile(std::string(AUTODIST_FIXTURES_DIR) + "/resource_specs/" + name +
                                    ".yml");
}

CompileResult CompileWith(const std::string& model, const std::string& spec,
                          const std::string& builder, BuilderOptions options = {}) {
  CompileRequest request;
  request.builder = builder;
  request.options = std::move(options);
  return Compile(ModelVariables(model), LoadSpec(spec), request);
}

// Independent statements of AutoDist's shard-count rules, to check the builders against.
int64_t SmallestDivisorAtLeastTwo(int64_t dim) {
  for (int64_t d = 2; d < dim; ++d) {
    if (dim % d == 0) return d;
  }
  return dim;
}

int64_t SmallestNonDivisorAtLeastTwo(int64_t dim) {
  for (int64_t d = 2; d < dim; ++d) {
    if (dim % d != 0) return d;
  }
  return dim;
}

std::vector<int64_t> SplitEntries(const std::string& partitioner) {
  std::vector<int64_t> entries;
  size_t start = 0;
  while (start <= partitioner.size()) {
    const size_t end = std::min(partitioner.find(',', start), partitioner.size());
    entries.push_back(std::stoll(partitioner.substr(start, end - start)));
    start = end + 1;
  }
  return entries;
}

bool IsPartitionedBuilder(const std::string& builder) {
  return builder == "PartitionedPS" || builder == "UnevenPartitionedPS" ||
         builder == "PartitionedAR" || builder == "RandomAxisPartitionAR";
}

bool IsAllReduceFamily(const std::string& builder) {
  return builder == "AllReduce" || builder == "PartitionedAR" || builder == "RandomAxisPartitionAR";
}

using MatrixParam = std::tuple<std::string, std::string, std::string>;  // model, spec, builder

class BuildersOnModelsTest : public ::testing::TestWithParam<MatrixParam> {
 protected:
  const std::string& model() const { return std::get<0>(GetParam()); }
  const std::string& spec() const { return std::get<1>(GetParam()); }
  const std::string& builder() const { return std::get<2>(GetParam()); }
};

TEST_P(BuildersOnModelsTest, InvariantsHold) {
  const std::vector<graph::Variable>& variables = ModelVariables(model());
  ASSERT_FALSE(variables.empty());
  const ResourceSpec resources = LoadSpec(spec());
  const SpecFixture& expected_spec = SpecNamed(spec());
  ASSERT_EQ(resources.Replicas(), expected_spec.replicas);
  ASSERT_EQ(resources.PsCandidates(), expected_spec.ps_candidates);
  const std::set<std::string> candidates(expected_spec.ps_candidates.begin(),
                                         expected_spec.ps_candidates.end());

  const CompileResult result = CompileWith(model(), spec(), builder());
  const Strategy& strategy = result.strategy;

  // Auto compiles its fastest-predicted candidate (auto_search_test.cc); every invariant below
  // holds for whichever builder that is.
  if (builder() == "Auto") {
    ASSERT_FALSE(result.ranking.empty());
  }
  const std::string effective =
      builder() != "Auto" ? builder() : result.ranking.front().candidate.builder;
  EXPECT_EQ(result.builder, effective);

  // Replicas are exactly the spec's.
  EXPECT_EQ(std::vector<std::string>(strategy.graph_config().replicas().begin(),
                                     strategy.graph_config().replicas().end()),
            expected_spec.replicas);

  // Every trainable variable exactly once, in model order.
  ASSERT_EQ(strategy.node_config_size(), static_cast<int>(variables.size()));

  int allreduce_units = 0;
  std::vector<int> groups;
  int64_t ps_bytes = 0;
  for (int i = 0; i < strategy.node_config_size(); ++i) {
    const Strategy::Node& node = strategy.node_config(i);
    const graph::Variable& variable = variables[static_cast<size_t>(i)];
    SCOPED_TRACE("variable " + variable.name);
    ASSERT_EQ(node.var_name(), variable.name);

    // The synchronized units: the node itself, or its parts.
    std::vector<const Strategy::Node*> units;
    if (node.partitioner().empty()) {
      EXPECT_EQ(node.part_config_size(), 0);
      units.push_back(&node);
    } else {
      EXPECT_TRUE(variable.partitionable) << "a control-flow variable was partitioned";
      EXPECT_TRUE(IsPartitionedBuilder(effective));
      EXPECT_EQ(node.synchronizer_case(), Strategy::Node::SYNCHRONIZER_NOT_SET);
      const std::vector<int64_t> entries = SplitEntries(node.partitioner());
      ASSERT_EQ(entries.size(), variable.shape.size());
      const int64_t product =
          std::accumulate(entries.begin(), entries.end(), int64_t{1}, std::multiplies<>());
      EXPECT_GE(product, 2);
      EXPECT_EQ(node.part_config_size(), product);
      EXPECT_NO_THROW(ParsePartitioner(node.partitioner(), variable.shape, variable.name));
      // One axis is cut, into the builder's shard count for that axis.
      int cut_axes = 0;
      for (size_t axis = 0; axis < entries.size(); ++axis) {
        if (entries[axis] == 1) continue;
        ++cut_axes;
        const int64_t dim = variable.shape[axis];
        if (effective == "UnevenPartitionedPS") {
          EXPECT_EQ(axis, 0u);
          EXPECT_EQ(entries[axis], SmallestNonDivisorAtLeastTwo(dim));
        } else {
          if (effective != "RandomAxisPartitionAR" || variable.sparse) {
            EXPECT_EQ(axis, 0u);
          }
          EXPECT_EQ(entries[axis], SmallestDivisorAtLeastTwo(dim));
        }
      }
      EXPECT_EQ(cut_axes, 1);
      for (int p = 0; p < node.part_config_size(); ++p) {
        const Strategy::Node& part = node.part_config(p);
        EXPECT_EQ(part.var_name(), variable.name + "/part_" + std::to_string(p) + ":0");
        EXPECT_TRUE(part.partitioner().empty());
        EXPECT_EQ(part.part_config_size(), 0);
        units.push_back(&part);
      }
    }

    // Partitioning builders cut every variable that can be cut along axis 0 (the random-axis
    // builder along some axis of size > 1).
    if (effective == "PartitionedPS" || effective == "UnevenPartitionedPS" ||
        effective == "PartitionedAR") {
      const bool cuttable =
          variable.partitionable && !variable.shape.empty() && variable.shape[0] > 1;
      EXPECT_EQ(!node.partitioner().empty(), cuttable);
    }
    if (effective == "RandomAxisPartitionAR") {
      const bool cuttable =
          variable.partitionable && std::any_of(variable.shape.begin(), variable.shape.end(),
                                                [](int64_t d) { return d > 1; });
      EXPECT_EQ(!node.partitioner().empty(), cuttable);
    }

    bool all_ps = true;
    for (const Strategy::Node* unit : units) {
      ASSERT_NE(unit->synchronizer_case(), Strategy::Node::SYNCHRONIZER_NOT_SET);
      if (unit->has_pssynchronizer()) {
        const auto& ps = unit->pssynchronizer();
        EXPECT_EQ(candidates.count(ps.reduction_destination()), 1u)
            << ps.reduction_destination() << " is not a PS candidate";
        EXPECT_TRUE(ps.sync());  // defaults: synchronous, no staleness, no proxy
        EXPECT_EQ(ps.staleness(), 0);
        // Auto may choose the local proxy where a node has several replicas.
        if (builder() != "Auto") {
          EXPECT_FALSE(ps.local_replication());
        }
        EXPECT_FALSE(IsAllReduceFamily(effective));
        if (effective == "PS") {
          EXPECT_EQ(ps.reduction_destination(), expected_spec.ps_candidates.front());
        }
      } else {
        all_ps = false;
        ++allreduce_units;
        groups.push_back(unit->allreducesynchronizer().group());
        EXPECT_EQ(unit->allreducesynchronizer().compressor(),
                  AllReduceSynchronizer::NoneCompressor);
        EXPECT_TRUE(IsAllReduceFamily(effective) || effective == "Parallax");
      }
    }
    if (all_ps) ps_bytes += variable.bytes;

    // Parallax: sparse variables on a parameter server, dense ones all-reduced; never cut.
    if (effective == "Parallax") {
      EXPECT_TRUE(node.partitioner().empty());
      EXPECT_EQ(node.has_pssynchronizer(), variable.sparse);
      EXPECT_EQ(node.has_allreducesynchronizer(), !variable.sparse);
    }
  }

  for (const int group : groups) {
    EXPECT_GE(group, 0);
    EXPECT_LT(group, allreduce_units);
  }

  // The summary's bytes per PS add up to the bytes of the PS-synchronized variables, and list
  // exactly the PS candidates (every destination is one).
  const StrategySummary summary = Summarize(strategy, variables, resources);
  int64_t summed = 0;
  std::vector<std::string> listed;
  for (const auto& [device, bytes] : summary.bytes_per_ps) {
    summed += bytes;
    listed.push_back(device);
  }
  EXPECT_EQ(summed, ps_bytes);
  EXPECT_EQ(listed, expected_spec.ps_candidates);
  EXPECT_EQ(summary.allreduce_shards, allreduce_units);
  EXPECT_EQ(summary.replicas, static_cast<int>(expected_spec.replicas.size()));

  // Compiling again gives the same bytes (RandomAxisPartitionAR included: fixed default seed).
  EXPECT_EQ(CompileWith(model(), spec(), builder()).strategy.SerializeAsString(),
            strategy.SerializeAsString());
}

std::vector<std::string> SpecNames() {
  std::vector<std::string> names;
  for (const SpecFixture& spec : Specs()) names.push_back(spec.name);
  return names;
}

// "mlp_several_ps_PSLoadBalancing".
std::string MatrixName(const ::testing::TestParamInfo<MatrixParam>& param_info) {
  return std::get<0>(param_info.param) + "_" + std::get<1>(param_info.param) + "_" +
         std::get<2>(param_info.param);
}

INSTANTIATE_TEST_SUITE_P(AllCombinations, BuildersOnModelsTest,
                         ::testing::Combine(::testing::ValuesIn(kModels),
                                            ::testing::ValuesIn(SpecNames()),
                                            ::testing::ValuesIn(BuilderNames())),
                         MatrixName);

// ---- Exact expectations on real models -------------------------------------------------------

const std::string kA = "192.168.0.1:CPU:0";
const std::string kB = "192.168.0.2:CPU:0";
const std::string kC = "192.168.0.3:CPU:0";

std::vector<std::string> Destinations(const Strategy::Node& node) {
  std::vector<std::string> out;
  if (node.part_config_size() == 0) {
    out.push_back(node.pssynchronizer().reduction_destination());
  }
  for (const auto& part : node.part_config()) {
    out.push_back(part.pssynchronizer().reduction_destination());
  }
  return out;
}

std::map<std::string, int64_t> BytesPerPs(const CompileResult& result, const std::string& model,
                                          const std::string& spec) {
  const StrategySummary summary = Summarize(result.strategy, ModelVariables(model), LoadSpec(spec));
  return {summary.bytes_per_ps.begin(), summary.bytes_per_ps.end()};
}

TEST(MlpVariablesTest, SizesAreTheModelsShapes) {
  // mlp: 784 -> 256 -> 128 -> 10, float32.
  const auto& variables = ModelVariables("mlp");
  std::vector<std::pair<std::string, int64_t>> actual;
  for (const auto& v : variables) actual.emplace_back(v.name, v.bytes);
  EXPECT_EQ(actual, (std::vector<std::pair<std::string, int64_t>>{{"fc1.weight", 256 * 784 * 4},
                                                                  {"fc1.bias", 256 * 4},
                                                                  {"fc2.weight", 128 * 256 * 4},
                                                                  {"fc2.bias", 128 * 4},
                                                                  {"fc3.weight", 10 * 128 * 4},
                                                                  {"fc3.bias", 10 * 4}}));
}

TEST(ExactOnModelsTest, MlpPsLoadBalancingOnThreeServers) {
  // Greedy by bytes, ties to the earliest server (loads a, b, c):
  //   fc1.weight 802816 -> a (0,0,0)                 a=802816
  //   fc1.bias     1024 -> b (b=c=0, b first)        b=1024
  //   fc2.weight 131072 -> c (c=0)                   c=131072
  //   fc2.bias      512 -> b (b=1024 least)          b=1536
  //   fc3.weight   5120 -> b                         b=6656
  //   fc3.bias       40 -> b                         b=6696
  const CompileResult result = CompileWith("mlp", "several_ps", "PSLoadBalancing");
  std::vector<std::string> destinations;
  for (const auto& node : result.strategy.node_config()) {
    ASSERT_TRUE(node.has_pssynchronizer());
    destinations.push_back(node.pssynchronizer().reduction_destination());
  }
  EXPECT_EQ(destinations, (std::vector<std::string>{kA, kB, kC, kB, kB, kB}));
  EXPECT_EQ(BytesPerPs(result, "mlp", "several_ps"),
            (std::map<std::string, int64_t>{{kA, 802816}, {kB, 6696}, {kC, 131072}}));
}

TEST(ExactOnModelsTest, MlpPartitionedPsOnThreeServers) {
  // Shards: smallest divisor >= 2 of dim 0: 256, 128 and 10 are even -> 2 shards each.
  // Each shard adds bytes/2 to its server; LeastLoadedN(2) takes servers in ascending load,
  // ties in node order:
  //   fc1.weight 401408 x2 -> a, b          a=401408 b=401408 c=0
  //   fc1.bias      512 x2 -> c, a          a=401920 b=401408 c=512
  //   fc2.weight  65536 x2 -> c, b          a=401920 b=466944 c=66048
  //   fc2.bias      256 x2 -> c, a          a=402176          c=66304
  //   fc3.weight   2560 x2 -> c, a          a=404736          c=68864
  //   fc3.bias       20 x2 -> c, a          a=404756          c=68884
  const CompileResult result = CompileWith("mlp", "several_ps", "PartitionedPS");
  const auto& nodes = result.strategy.node_config();
  std::vector<std::string> partitioners;
  for (const auto& node : nodes) partitioners.push_back(node.partitioner());
  EXPECT_EQ(partitioners, (std::vector<std::string>{"2,1", "2", "2,1", "2", "2,1", "2"}));
  EXPECT_EQ(Destinations(nodes[0]), (std::vector<std::string>{kA, kB}));
  EXPECT_EQ(Destinations(nodes[1]), (std::vector<std::string>{kC, kA}));
  EXPECT_EQ(Destinations(nodes[2]), (std::vector<std::string>{kC, kB}));
  EXPECT_EQ(Destinations(nodes[3]), (std::vector<std::string>{kC, kA}));
  EXPECT_EQ(Destinations(nodes[4]), (std::vector<std::string>{kC, kA}));
  EXPECT_EQ(Destinations(nodes[5]), (std::vector<std::string>{kC, kA}));
  EXPECT_EQ(nodes[0].part_config(1).var_name(), "fc1.weight/part_1:0");
  // a: 401408+512+256+2560+20; b: 401408+65536; c: 512+65536+256+2560+20.
  EXPECT_EQ(BytesPerPs(result, "mlp", "several_ps"),
            (std::map<std::string, int64_t>{{kA, 404756}, {kB, 466944}, {kC, 68884}}));
}

TEST(ExactOnModelsTest, MlpUnevenPartitionedPsCutsInThree) {
  // Smallest non-divisor >= 2 of dim 0: 256 -> 3, 128 -> 3, 10 -> 3 (2 divides each).
  // Every variable adds a third of its bytes to all three servers, so loads stay equal and each
  // variable goes a, b, c. Shard rows follow the "first dim % 3 shards get one more" rule:
  //   256 -> 86,85,85   128 -> 43,43,42   10 -> 4,3,3
  // a: 86*3136 + 86*4 + 43*1024 + 43*4 + 4*512 + 4*4 = 269696+344+44032+172+2048+16 = 316308
  // b: 85*3136 + 85*4 + 43*1024 + 43*4 + 3*512 + 3*4 = 266560+340+44032+172+1536+12 = 312652
  // c: 85*3136 + 85*4 + 42*1024 + 42*4 + 3*512 + 3*4 = 266560+340+43008+168+1536+12 = 311624
  const CompileResult result = CompileWith("mlp", "several_ps", "UnevenPartitionedPS");
  std::vector<std::string> partitioners;
  for (const auto& node : result.strategy.node_config()) {
    partitioners.push_back(node.partitioner());
    EXPECT_EQ(Destinations(node), (std::vector<std::string>{kA, kB, kC})) << node.var_name();
  }
  EXPECT_EQ(partitioners, (std::vector<std::string>{"3,1", "3", "3,1", "3", "3,1", "3"}));
  const auto bytes = BytesPerPs(result, "mlp", "several_ps");
  EXPECT_EQ(bytes, (std::map<std::string, int64_t>{{kA, 316308}, {kB, 312652}, {kC, 311624}}));
}

TEST(ExactOnModelsTest, MlpPartitionedArGroupsFollowTheShardCounter) {
  // Two shards per variable: counters 0..11; chunk_size 5 -> groups 0 x5, 1 x5, 2 x2.
  const CompileResult result =
      CompileWith("mlp", "one_node_two_gpus", "PartitionedAR", {{"chunk_size", "5"}});
  std::vector<int> groups;
  for (const auto& node : result.strategy.node_config()) {
    for (const auto& part : node.part_config()) {
      EXPECT_EQ(part.allreducesynchronizer().spec(), AllReduceSynchronizer::AUTO);
      groups.push_back(part.allreducesynchronizer().group());
    }
  }
  EXPECT_EQ(groups, (std::vector<int>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2}));
}

TEST(ExactOnModelsTest, ControlFlowPartitionedPsCutsOnlyTheDenseOutsideVariable) {
  // dense_w [4,4] (64 B) is the only variable outside control flow: 2 shards of 32 B -> a, b.
  // The rest stay whole, greedy by bytes (a=32 b=32 c=0):
  //   loop_w 16 -> c (c=16); loop_table 48 -> c (c=64); alias_w 16 -> a (a=b=32, a first, a=48);
  //   nested_w 16 -> b (b=48); state_w 16 -> a (a=b=48, a first).
  const CompileResult result = CompileWith("control_flow", "several_ps", "PartitionedPS");
  const auto& nodes = result.strategy.node_config();
  ASSERT_EQ(nodes.size(), 6);
  EXPECT_EQ(nodes[0].partitioner(), "2,1");
  EXPECT_EQ(Destinations(nodes[0]), (std::vector<std::string>{kA, kB}));
  const std::vector<std::vector<std::string>> rest = {{kC}, {kC}, {kA}, {kB}, {kA}};
  for (int i = 1; i < 6; ++i) {
    EXPECT_TRUE(nodes[i].partitioner().empty()) << nodes[i].var_name();
    EXPECT_EQ(Destinations(nodes[i]), rest[static_cast<size_t>(i - 1)]) << nodes[i].var_name();
  }
}

TEST(ExactOnModelsTest, EmbeddingUnderParallax) {
  // embedding.weight is read only through Gather: sparse, so Parallax puts it on the first
  // (least-loaded) server; fc.weight and fc.bias are all-reduced in group 1/128 = 2/128 = 0.
  const CompileResult result = CompileWith("embedding", "several_ps", "Parallax");
  const auto& nodes = result.strategy.node_config();
  ASSERT_EQ(nodes.size(), 3);
  EXPECT_EQ(nodes[0].var_name(), "embedding.weight");
  EXPECT_EQ(nodes[0].pssynchronizer().reduction_destination(), kA);
  for (int i = 1; i < 3; ++i) {
    ASSERT_TRUE(nodes[i].has_allreducesynchronizer());
    EXPECT_EQ(nodes[i].allreducesynchronizer().group(), 0);
    EXPECT_EQ(nodes[i].allreducesynchronizer().spec(), AllReduceSynchronizer::NCCL);
  }
  EXPECT_EQ(BytesPerPs(result, "embedding", "several_ps"),
            (std::map<std::string, int64_t>{{kA, 1000 * 64 * 4}, {kB, 0}, {kC, 0}}));
}

TEST(ExactOnModelsTest, CnnSkipsNonTrainableBatchNormStatistics) {
  // The running mean/var of both BatchNorms are replica-local: 14 initializers, 10 trainable.
  const CompileResult result = CompileWith("cnn", "one_node_two_gpus", "AllReduce");
  std::vector<std::string> names;
  for (const auto& node : result.strategy.node_config()) names.push_back(node.var_name());
  EXPECT_EQ(names, (std::vector<std::string>{"conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias",
                                             "conv2.weight", "conv2.bias", "bn2.weight", "bn2.bias",
                                             "fc.weight", "fc.bias"}));
}

}  // namespace
}  // namespace autodist::strategy
