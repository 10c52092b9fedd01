#include "runtime/strategy/resource_spec.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "runtime/common/error.h"

namespace autodist::strategy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Devices = std::vector<std::string>;

std::string Fixture(const std::string& name) {
  return std::string(AUTODIST_FIXTURES_DIR) + "/resource_specs/" + name;
}

// Runs `body`, expects an autodist::Error and returns its message (empty if none was thrown).
template <typename Body>
std::string ErrorMessage(Body body, ErrorCode expected_code = ErrorCode::kInvalidArgument) {
  try {
    body();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), expected_code) << error.what();
    return error.what();
  } catch (const std::exception& other) {
    ADD_FAILURE() << "expected autodist::Error, got another exception: " << other.what();
    return other.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

NodeSpec Node(std::string address, std::vector<int> cpus, std::vector<int> gpus, bool chief = false,
              NodeRole role = NodeRole::kAny) {
  NodeSpec node;
  node.address = std::move(address);
  node.cpus = std::move(cpus);
  node.gpus = std::move(gpus);
  node.chief = chief;
  node.role = role;
  return node;
}

// ---- the fixture files ----------------------------------------------------------------------

TEST(ResourceSpecTest, OneNodeOneGpuIsChiefByDefault) {
  const auto spec = ResourceSpec::FromYamlFile(Fixture("one_node_one_gpu.yml"));
  ASSERT_EQ(spec.nodes().size(), 1u);
  EXPECT_TRUE(spec.nodes()[0].chief);
  EXPECT_EQ(spec.chief_address(), "192.168.0.1");
  EXPECT_EQ(spec.NumGpus(), 1);
  EXPECT_EQ(spec.Replicas(), Devices{"192.168.0.1:GPU:0"});
  EXPECT_EQ(spec.PsCandidates(), Devices{"192.168.0.1:CPU:0"});
  EXPECT_EQ(spec.CpuDevices(), Devices{"192.168.0.1:CPU:0"});
  EXPECT_EQ(spec.GpuDevices(), Devices{"192.168.0.1:GPU:0"});
}

TEST(ResourceSpecTest, OneNodeTwoGpus) {
  const auto spec = ResourceSpec::FromYamlFile(Fixture("one_node_two_gpus.yml"));
  EXPECT_EQ(spec.chief_address(), "192.168.0.1");
  EXPECT_EQ(spec.NumGpus(), 2);
  EXPECT_EQ(spec.Replicas(), (Devices{"192.168.0.1:GPU:0", "192.168.0.1:GPU:1"}));
  EXPECT_EQ(spec.PsCandidates(), Devices{"192.168.0.1:CPU:0"});
}

TEST(ResourceSpecTest, TwoNodesUnevenGpus) {
  const auto spec = ResourceSpec::FromYamlFile(Fixture("two_nodes_uneven_gpus.yml"));
  ASSERT_EQ(spec.nodes().size(), 2u);
  EXPECT_EQ(spec.chief_address(), "192.168.0.1");
  EXPECT_FALSE(spec.nodes()[1].chief);
  EXPECT_EQ(spec.NumGpus(), 3);
  EXPECT_EQ(spec.Replicas(),
            (Devices{"192.168.0.1:GPU:0", "192.168.0.1:GPU:1", "192.168.0.2:GPU:0"}));
  EXPECT_EQ(spec.GpuDevices(), spec.Replicas());
  EXPECT_EQ(spec.PsCandidates(), (Devices{"192.168.0.1:CPU:0", "192.168.0.2:CPU:0"}));
  EXPECT_EQ(spec.CpuDevices(), spec.PsCandidates());
  // The informational fields are kept; the `ssh:` section is accepted and ignored.
  EXPECT_EQ(spec.nodes()[0].network_bandwidth, 25.0);
  EXPECT_EQ(spec.nodes()[1].ssh_config, "conf");
  EXPECT_EQ(spec.nodes()[0].role, NodeRole::kAny);
}

TEST(ResourceSpecTest, CpuOnlyNodesUseEveryListedCpu) {
  const auto spec = ResourceSpec::FromYamlFile(Fixture("cpu_only_nodes.yml"));
  EXPECT_EQ(spec.NumGpus(), 0);
  EXPECT_TRUE(spec.GpuDevices().empty());
  const Devices cpus{"192.168.0.1:CPU:0", "192.168.0.1:CPU:1", "192.168.0.2:CPU:0"};
  EXPECT_EQ(spec.CpuDevices(), cpus);
  EXPECT_EQ(spec.Replicas(), cpus);
  EXPECT_EQ(spec.PsCandidates(), cpus);
}

TEST(ResourceSpecTest, SeveralPs) {
  const auto spec = ResourceSpec::FromYamlFile(Fixture("several_ps.yml"));
  const Devices cpus{"192.168.0.1:CPU:0", "192.168.0.2:CPU:0", "192.168.0.3:CPU:0"};
  EXPECT_EQ(spec.PsCandidates(), cpus);
  EXPECT_EQ(spec.Replicas(), cpus);
  EXPECT_EQ(spec.chief_address(), "192.168.0.1");
}

TEST(ResourceSpecTest, ExampleSpecIsOneLocalCpu) {
  const auto spec = ResourceSpec::FromYamlFile(std::string(AUTODIST_SOURCE_DIR) +
                                               "/examples/fashion-mnist/resource_spec.yml");
  EXPECT_EQ(spec.chief_address(), "localhost");
  EXPECT_EQ(spec.Replicas(), Devices{"localhost:CPU:0"});
  EXPECT_EQ(spec.PsCandidates(), Devices{"localhost:CPU:0"});
}

// ---- device rules -----------------------------------------------------------------------------

TEST(ResourceSpecTest, IndicesAreSortedAndDeduplicated) {
  const auto spec = ResourceSpec::FromYamlString(R"(
nodes:
  - address: 10.0.0.1
    gpus: [1, 0, 1]
    chief: true
  - address: 10.0.0.2
    cpus: [2, 0, 2, 1]
)",
                                                 "inline.yml");
  EXPECT_THAT(spec.nodes()[0].gpus, ElementsAre(0, 1));
  EXPECT_THAT(spec.nodes()[1].cpus, ElementsAre(0, 1, 2));
  EXPECT_EQ(spec.Replicas(), (Devices{"10.0.0.1:GPU:0", "10.0.0.1:GPU:1", "10.0.0.2:CPU:0",
                                      "10.0.0.2:CPU:1", "10.0.0.2:CPU:2"}));
}

TEST(ResourceSpecTest, CpuZeroIsAlwaysADevice) {
  const auto spec =
      ResourceSpec::FromYamlString("nodes: [{address: 10.0.0.1, cpus: [3, 2]}]", "inline.yml");
  EXPECT_EQ(spec.CpuDevices(), (Devices{"10.0.0.1:CPU:0", "10.0.0.1:CPU:2", "10.0.0.1:CPU:3"}));
}

TEST(ResourceSpecTest, MixedGpuAndCpuOnlyNodes) {
  // Extra CPUs of a GPU node are not devices; a CPU-only node's CPUs follow all GPUs.
  const auto spec = ResourceSpec::FromYamlString(R"(
nodes:
  - address: 10.0.0.2
    cpus: [0, 1]
  - address: 10.0.0.1
    cpus: [0, 1, 2]
    gpus: [0]
    chief: true
)",
                                                 "mixed.yml");
  EXPECT_EQ(spec.Replicas(), (Devices{"10.0.0.1:GPU:0", "10.0.0.2:CPU:0", "10.0.0.2:CPU:1"}));
  EXPECT_EQ(spec.CpuDevices(), (Devices{"10.0.0.2:CPU:0", "10.0.0.2:CPU:1", "10.0.0.1:CPU:0"}));
  EXPECT_EQ(spec.PsCandidates(), spec.CpuDevices());
  EXPECT_EQ(spec.GpuDevices(), Devices{"10.0.0.1:GPU:0"});
  EXPECT_EQ(spec.chief_address(), "10.0.0.1");
}

TEST(ResourceSpecTest, EmptyGpuListMeansCpuOnly) {
  const auto spec = ResourceSpec::FromYamlString(
      "nodes: [{address: 10.0.0.1, cpus: [0, 1], gpus: []}]", "inline.yml");
  EXPECT_EQ(spec.Replicas(), (Devices{"10.0.0.1:CPU:0", "10.0.0.1:CPU:1"}));
}

TEST(ResourceSpecTest, RolesSplitReplicasFromParameterServers) {
  const auto spec = ResourceSpec::FromYamlString(R"(
nodes:
  - address: 10.0.0.1
    gpus: [0, 1]
    role: worker
    chief: true
  - address: 10.0.0.2
    cpus: [0, 1]
    role: ps
  - address: 10.0.0.3
    gpus: [0]
)",
                                                 "roles.yml");
  EXPECT_EQ(spec.nodes()[0].role, NodeRole::kWorker);
  EXPECT_EQ(spec.nodes()[1].role, NodeRole::kParameterServer);
  EXPECT_EQ(spec.nodes()[2].role, NodeRole::kAny);
  EXPECT_EQ(spec.Replicas(), (Devices{"10.0.0.1:GPU:0", "10.0.0.1:GPU:1", "10.0.0.3:GPU:0"}));
  EXPECT_EQ(spec.PsCandidates(), (Devices{"10.0.0.2:CPU:0", "10.0.0.2:CPU:1", "10.0.0.3:CPU:0"}));
  EXPECT_EQ(spec.CpuDevices(),
            (Devices{"10.0.0.1:CPU:0", "10.0.0.2:CPU:0", "10.0.0.2:CPU:1", "10.0.0.3:CPU:0"}));
}

TEST(ResourceSpecTest, OnlyPsNodesLeaveNoReplicas) {
  const std::string message = ErrorMessage([] {
    ResourceSpec::FromYamlString("nodes: [{address: 10.0.0.1, role: ps}]", "ps_only.yml");
  });
  EXPECT_THAT(message, HasSubstr("resource spec ps_only.yml:1: nodes:"));
  EXPECT_THAT(message, HasSubstr("role ps"));
}

TEST(ResourceSpecTest, LoneNodeIsChiefEvenWhenMarkedOtherwise) {
  const auto spec =
      ResourceSpec::FromYamlString("nodes: [{address: 10.0.0.1, chief: false}]", "inline.yml");
  EXPECT_EQ(spec.chief_address(), "10.0.0.1");
}

TEST(ResourceSpecTest, SshSectionWithAnyContentIsIgnored) {
  const auto spec = ResourceSpec::FromYamlString(R"(
ssh: [whatever, {nested: [1, 2]}]
nodes:
  - address: localhost
    cpus: [0]
    ssh_config: group-a
)",
                                                 "inline.yml");
  EXPECT_EQ(spec.nodes()[0].ssh_config, "group-a");
}

TEST(ResourceSpecTest, LoopbackAddressesAreRefusedWithSeveralNodes) {
  for (const std::string loopback :
       {"localhost", "LocalHost", "127.0.0.1", "127.3.2.1", "::1", "0:0:0:0:0:0:0:1"}) {
    std::vector<NodeSpec> nodes{Node("192.168.0.1", {0}, {}, true), Node(loopback, {0}, {})};
    const std::string message = ErrorMessage([&] { ResourceSpec::FromNodes(nodes, "code"); });
    EXPECT_THAT(message, HasSubstr("nodes[1].address"));
    EXPECT_THAT(message, HasSubstr("'" + loopback + "'"));
  }
  // Alone, a loopback address is fine; near-loopback addresses are fine in any case.
  EXPECT_NO_THROW(ResourceSpec::FromNodes({Node("127.0.0.1", {0}, {})}, "code"));
  EXPECT_NO_THROW(ResourceSpec::FromNodes(
      {Node("128.0.0.1", {0}, {}, true), Node("::2", {0}, {}), Node("localhost2", {0}, {})},
      "code"));
}

// ---- FromNodes ----------------------------------------------------------------------------------

TEST(ResourceSpecTest, FromNodesNormalizesAndDefaultsChief) {
  const auto spec = ResourceSpec::FromNodes({Node("host-a", {1, 0, 1}, {})}, "code");
  EXPECT_TRUE(spec.nodes()[0].chief);
  EXPECT_THAT(spec.nodes()[0].cpus, ElementsAre(0, 1));
  EXPECT_EQ(spec.Replicas(), (Devices{"host-a:CPU:0", "host-a:CPU:1"}));
}

TEST(ResourceSpecTest, FromNodesValidates) {
  EXPECT_THAT(ErrorMessage([] { ResourceSpec::FromNodes({}, "code"); }),
              HasSubstr("resource spec code: nodes: expected at least one node"));
  EXPECT_THAT(ErrorMessage([] {
                ResourceSpec::FromNodes({Node("a", {}, {}), Node("b", {}, {})}, "code");
              }),
              HasSubstr("nodes: several nodes and none is marked chief: true"));
  EXPECT_THAT(ErrorMessage([] {
                ResourceSpec::FromNodes({Node("a", {}, {}, true), Node("b", {}, {}, true)}, "code");
              }),
              HasSubstr("nodes[1].chief: nodes 'a' and 'b' are both marked chief: true"));
  EXPECT_THAT(ErrorMessage([] {
                ResourceSpec::FromNodes({Node("a", {}, {}, true), Node("a", {}, {})}, "code");
              }),
              HasSubstr("nodes[1].address: duplicate address 'a' (also nodes[0])"));
  EXPECT_THAT(ErrorMessage([] {
                ResourceSpec::FromNodes({Node("a", {0, -2}, {})}, "code");
              }),
              HasSubstr("nodes[0].cpus[1]: expected a non-negative integer, got -2"));
  EXPECT_THAT(ErrorMessage([] { ResourceSpec::FromNodes({Node("", {}, {})}, "code"); }),
              HasSubstr("nodes[0].address: must not be empty"));
  EXPECT_THAT(ErrorMessage([] { ResourceSpec::FromNodes({Node("a b", {}, {})}, "code"); }),
              HasSubstr("nodes[0].address: must not contain whitespace"));
  NodeSpec slow = Node("a", {}, {});
  slow.network_bandwidth = -1.0;
  EXPECT_THAT(ErrorMessage([&] { ResourceSpec::FromNodes({slow}, "code"); }),
              HasSubstr("nodes[0].network_bandwidth"));
}

TEST(ResourceSpecTest, DefaultConstructedSpecHasNoChief) {
  const ResourceSpec spec;
  EXPECT_TRUE(spec.Replicas().empty());
  ErrorMessage([&] { spec.chief_address(); }, ErrorCode::kFailedPrecondition);
}

// ---- FromReplicaCounts
// ----------------------------------------------------------------------------

TEST(ResourceSpecTest, ReplicaCountsGpuWorkersWithDedicatedPs) {
  const auto spec = ResourceSpec::FromReplicaCounts(
      {.workers = 2, .gpus_per_worker = 2, .replicas_per_worker = 1, .parameter_servers = 1});
  ASSERT_EQ(spec.nodes().size(), 3u);
  EXPECT_EQ(spec.nodes()[0], Node("worker-0", {0}, {0, 1}, true, NodeRole::kWorker));
  EXPECT_EQ(spec.nodes()[1], Node("worker-1", {0}, {0, 1}, false, NodeRole::kWorker));
  EXPECT_EQ(spec.nodes()[2], Node("ps-0", {0}, {}, false, NodeRole::kParameterServer));
  EXPECT_EQ(spec.chief_address(), "worker-0");
  EXPECT_EQ(spec.NumGpus(), 4);
  EXPECT_EQ(spec.Replicas(),
            (Devices{"worker-0:GPU:0", "worker-0:GPU:1", "worker-1:GPU:0", "worker-1:GPU:1"}));
  EXPECT_EQ(spec.PsCandidates(), Devices{"ps-0:CPU:0"});
}

TEST(ResourceSpecTest, ReplicaCountsCpuWorkersHostingPs) {
  const auto spec = ResourceSpec::FromReplicaCounts(
      {.workers = 3, .gpus_per_worker = 0, .replicas_per_worker = 2, .parameter_servers = 0});
  ASSERT_EQ(spec.nodes().size(), 3u);
  for (const NodeSpec& node : spec.nodes()) {
    EXPECT_EQ(node.role, NodeRole::kAny);
    EXPECT_THAT(node.cpus, ElementsAre(0, 1));
    EXPECT_TRUE(node.gpus.empty());
  }
  const Devices cpus{"worker-0:CPU:0", "worker-0:CPU:1", "worker-1:CPU:0",
                     "worker-1:CPU:1", "worker-2:CPU:0", "worker-2:CPU:1"};
  EXPECT_EQ(spec.Replicas(), cpus);
  EXPECT_EQ(spec.PsCandidates(), cpus);
  EXPECT_EQ(spec.chief_address(), "worker-0");
}

TEST(ResourceSpecTest, ReplicaCountsUseTheAddressFunction) {
  const auto spec = ResourceSpec::FromReplicaCounts(
      {.workers = 1, .gpus_per_worker = 1, .replicas_per_worker = 1, .parameter_servers = 2},
      [](NodeRole role, int index) {
        return fmt::format("job-{}-{}.job", role == NodeRole::kWorker ? "worker" : "ps", index);
      });
  EXPECT_EQ(spec.Replicas(), Devices{"job-worker-0.job:GPU:0"});
  EXPECT_EQ(spec.PsCandidates(), (Devices{"job-ps-0.job:CPU:0", "job-ps-1.job:CPU:0"}));
  // Pod names are logical, so even a loopback-looking one is accepted; duplicates are not.
  EXPECT_NO_THROW(ResourceSpec::FromReplicaCounts(
      {.workers = 2}, [](NodeRole, int index) { return index == 0 ? "localhost" : "w1"; }));
  EXPECT_THAT(ErrorMessage([] {
                ResourceSpec::FromReplicaCounts({.workers = 2},
                                                [](NodeRole, int) { return std::string("same"); });
              }),
              HasSubstr("duplicate address 'same'"));
}

TEST(ResourceSpecTest, ReplicaCountsAreValidated) {
  struct Case {
    ReplicaCounts counts;
    std::string field;
  };
  const std::vector<Case> cases = {
      {{.workers = 0}, "resources.workers: expected at least 1, got 0"},
      {{.gpus_per_worker = -1}, "resources.gpus_per_worker: expected at least 0, got -1"},
      {{.replicas_per_worker = 0}, "resources.replicas_per_worker: expected at least 1, got 0"},
      {{.parameter_servers = -3}, "resources.parameter_servers: expected at least 0, got -3"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ErrorMessage([&] { ResourceSpec::FromReplicaCounts(c.counts); }),
                HasSubstr(c.field));
  }
}

// ---- ToYaml -------------------------------------------------------------------------------------

class RoundTripTest : public testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, ToYamlReadsBackToTheSameNodes) {
  const auto spec = ResourceSpec::FromYamlFile(Fixture(GetParam()));
  const auto again = ResourceSpec::FromYamlString(spec.ToYaml(), "round trip");
  EXPECT_EQ(again.nodes(), spec.nodes()) << spec.ToYaml();
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RoundTripTest,
                         testing::Values("one_node_one_gpu.yml", "one_node_two_gpus.yml",
                                         "two_nodes_uneven_gpus.yml", "cpu_only_nodes.yml",
                                         "several_ps.yml"));

TEST(ResourceSpecTest, ToYamlRoundTripsRolesAndOddValues) {
  NodeSpec ps = Node("null", {0, 3}, {}, false, NodeRole::kParameterServer);
  ps.network_bandwidth = 0.1;
  ps.ssh_config = "true";
  NodeSpec worker = Node("10.0.0.1", {0}, {0, 2}, true, NodeRole::kWorker);
  worker.network_bandwidth = 100;
  const auto spec = ResourceSpec::FromNodes({worker, ps}, "code");
  const std::string yaml = spec.ToYaml();
  EXPECT_THAT(yaml, HasSubstr("role: ps"));
  EXPECT_THAT(yaml, HasSubstr("role: worker"));
  EXPECT_EQ(ResourceSpec::FromYamlString(yaml, "round trip").nodes(), spec.nodes()) << yaml;

  const auto counted = ResourceSpec::FromReplicaCounts({.workers = 2, .parameter_servers = 1});
  EXPECT_EQ(ResourceSpec::FromYamlString(counted.ToYaml(), "round trip").nodes(), counted.nodes());
}

// ---- errors -------------------------------------------------------------------------------------

struct BadCase {
  std::string file;
  std::vector<std::string> expected;  // substrings of the message besides the file name
};

class BadFixtureTest : public testing::TestWithParam<BadCase> {};

TEST_P(BadFixtureTest, ErrorNamesFileAndField) {
  const std::string path = Fixture("bad/" + GetParam().file);
  const std::string message = ErrorMessage([&] { ResourceSpec::FromYamlFile(path); });
  EXPECT_THAT(message, HasSubstr("resource spec " + path + ":"));
  for (const std::string& expected : GetParam().expected) {
    EXPECT_THAT(message, HasSubstr(expected));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, BadFixtureTest,
    testing::Values(
        BadCase{"malformed.yml", {":4:", ": invalid YAML: "}},
        BadCase{"two_chiefs.yml",
                {"nodes[1].chief: nodes '192.168.0.1' and '192.168.0.2' are both marked"}},
        BadCase{"no_chief.yml", {"nodes: several nodes and none is marked chief: true"}},
        BadCase{"loopback_several_nodes.yml", {"nodes[1].address: loopback address 'localhost'"}},
        BadCase{"duplicate_address.yml",
                {"nodes[2].address: duplicate address '192.168.0.1' (also nodes[0])"}},
        BadCase{"negative_gpu.yml", {"nodes[0].gpus[1]: expected a non-negative integer, got -1"}},
        BadCase{"gpus_not_a_list.yml",
                {"nodes[1].gpus: expected a list of non-negative integers, got \"abc\""}},
        BadCase{"unknown_node_key.yml",
                {"nodes[0].gpu: unknown field (expected one of: address, cpus, gpus, chief"}},
        BadCase{"empty_nodes.yml", {"nodes: expected at least one node, got an empty list"}},
        BadCase{"unknown_top_level_key.yml",
                {"cluster: unknown field (expected one of: nodes, ssh)"}},
        BadCase{"missing_address.yml", {"nodes[0].address: required field is missing"}},
        BadCase{"bad_role.yml", {"nodes[0].role: expected 'worker' or 'ps', got \"chief\""}},
        BadCase{"zero_bandwidth.yml", {"nodes[0].network_bandwidth: expected a positive number"}},
        BadCase{"chief_not_bool.yml", {"nodes[0].chief: expected true or false, got \"maybe\""}}),
    [](const testing::TestParamInfo<BadCase>& param_info) {
      const std::string& file = param_info.param.file;
      return file.substr(0, file.find('.'));
    });

TEST(ResourceSpecTest, MissingFileIsNotFound) {
  const std::string message = ErrorMessage(
      [] { ResourceSpec::FromYamlFile(Fixture("no_such_spec.yml")); }, ErrorCode::kNotFound);
  EXPECT_THAT(message, HasSubstr("no_such_spec.yml"));
}

TEST(ResourceSpecTest, MalformedInputNeverLeaksYamlExceptions) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "expected a mapping with fields nodes, ssh, got an empty value"},
      {"[1, 2]", "expected a mapping with fields nodes, ssh, got a list"},
      {"ssh: {}", "nodes: required field is missing"},
      {"nodes: {address: a}", "nodes: expected a list of nodes, got a mapping"},
      {"nodes: [a]", "nodes[0]: expected a mapping with fields address, cpus, gpus"},
      {"nodes: [{address: [a]}]", "nodes[0].address: expected a string, got a list"},
      {"nodes: [{address: a, gpus: }]", "nodes[0].gpus: expected a list of non-negative integers"},
      {"nodes: [{address: a, gpus: [1.5]}]", "nodes[0].gpus[0]: expected a non-negative integer"},
      {"nodes: [{address: a, cpus: [[0]]}]", "nodes[0].cpus[0]: expected a non-negative integer"},
      {"nodes: [{address: a, gpus: [99999999999]}]", "nodes[0].gpus[0]"},
      {"nodes: [{address: a, network_bandwidth: fast}]", "nodes[0].network_bandwidth"},
      {"nodes: [{address: a, network_bandwidth: .inf}]", "nodes[0].network_bandwidth"},
      {"nodes: [{address: a, address: b}]", "nodes[0].address: field appears twice"},
      {"nodes: [{address: a}]\n---\nnodes: []", "expected one YAML document, got 2"},
      {"nodes: [{address: a}\n", ": invalid YAML: "},
      {"nodes:\n\t- address: a", "s.yml:2:"},
      {"nodes: [{address: *x}]", "invalid YAML"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string message = ErrorMessage([&] { ResourceSpec::FromYamlString(text, "s.yml"); });
    EXPECT_THAT(message, HasSubstr("resource spec s.yml")) << text;
    EXPECT_THAT(message, HasSubstr(expected)) << text;
  }
}

TEST(ResourceSpecTest, DeviceNames) {
  EXPECT_EQ(CpuDevice("10.0.0.1", 0), "10.0.0.1:CPU:0");
  EXPECT_EQ(GpuDevice("worker-1", 3), "worker-1:GPU:3");
}

}  // namespace
}  // namespace autodist::strategy
